"""The on-disk PTX cache ($KREG_HOME/cache/ptx), trusted no further than its content hash: each entry
is `<key>.ptx` beside `<key>.sha256` (key: the sha256 of source, headers, options and compiler), and
a PTX whose bytes no longer match the recorded sha256 is not used (kreg says so on stderr and
recompiles). A cache folder that cannot be written is skipped: compiling works without it."""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

MAX_PTX_BYTES = 256 << 20
_warned: set[str] = set()


def _note(kind: str, text: str) -> None:
    if kind not in _warned:
        _warned.add(kind)
        print(f"kreg: {text}", file=sys.stderr)


class PtxCache:
    """One cache entry."""

    def __init__(self, folder: Path, key: str):
        self.folder, self.key = Path(folder), key
        self.ptx_file = self.folder / f"{key}.ptx"
        self.sha_file = self.folder / f"{key}.sha256"

    def get(self) -> str | None:
        """The cached PTX if present and intact; None otherwise (after saying why, if it was there)."""
        try:
            if not self.ptx_file.is_file():
                return None
            if self.ptx_file.stat().st_size > MAX_PTX_BYTES:
                raise ValueError("larger than any PTX kreg writes")
            raw = self.ptx_file.read_bytes()
            want = self.sha_file.read_text().strip() if self.sha_file.is_file() else None
        except (OSError, ValueError) as e:
            _note("bad-" + self.key, f"cached PTX {self.key[:16]}... cannot be used ({e}); recompiling")
            return None
        if want is None:
            _note("nosha-" + self.key, f"cached PTX {self.key[:16]}... has no recorded sha256; recompiling")
            return None
        if hashlib.sha256(raw).hexdigest() != want:
            _note("mismatch-" + self.key, f"cached PTX {self.key[:16]}... does not match its recorded sha256 "
                  "(modified or corrupt); recompiling")
            return None
        try:
            return raw.decode()
        except UnicodeDecodeError:
            return None

    def put(self, ptx: str) -> None:
        """Store the sha256, then the PTX (each file written to a temporary name and renamed, so an entry
        is never seen half written; the .ptx, last, is what makes it present); if either write fails (a
        full disk), neither file is left. Skipped if the folder is not writable."""
        data = ptx.encode()
        try:
            _atomic_write(self.sha_file, hashlib.sha256(data).hexdigest().encode() + b"\n")
            _atomic_write(self.ptx_file, data)
        except OSError as e:
            for f in (self.ptx_file, self.sha_file):
                try:
                    f.unlink()
                except OSError:
                    pass
            _note("readonly", f"PTX cache {self.folder} not writable ({e.strerror or e}); compiling without it")


def exact_file(folder: Path, ptx: str) -> Path:
    """A file holding exactly this PTX, named by its sha256 (what a GPU loads): in the cache folder, or
    in a private temporary folder if the cache cannot be written."""
    data = ptx.encode()
    sha = hashlib.sha256(data).hexdigest()
    for base in (Path(folder), _private_tmp()):
        path = base / f"exact-{sha}.ptx"
        try:
            if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha:
                return path
            _atomic_write(path, data)
            return path
        except OSError:
            continue
    raise OSError("no writable folder for the PTX file (the PTX cache and the temporary folder are read-only)")


def _private_tmp() -> Path:
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="kreg-ptx-"))
    return _TMP


_TMP: Path | None = None


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
