"""The on-disk PTX cache ($KREG_HOME/cache/ptx), trusted no further than its content hash. A compile is
found by its key: `<key>.ptx` beside `<key>.sha256` (key: the sha256 of source, headers, options and
compiler); a PTX whose bytes no longer match the recorded sha256 is not used (kreg says so on stderr and
recompiles). The sm_90 cubin the toolchain check assembles is kept the same way (`<key>-sm_90.cubin`).
A PTX is found by its own sha256 (ptx_digest): `exact-<sha256>.ptx`, content-addressed, what the engine
loads a proven PTX from and what a GPU reads; its bytes are hashed on every read. A cache folder that
cannot be written is skipped: compiling works without it."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from kreg.checker.ptx.digest import ptx_digest

MAX_PTX_BYTES = 256 << 20
_warned: set[str] = set()


def _note(kind: str, text: str) -> None:
    if kind not in _warned:
        _warned.add(kind)
        print(f"kreg: {text}", file=sys.stderr)


class PtxCache:
    """One cache entry: a compile's PTX (or, with suffix=".cubin", the sm_90 cubin of the same compile)."""

    def __init__(self, folder: Path, key: str, suffix: str = ".ptx"):
        self.folder, self.key = Path(folder), key
        self.ptx_file = self.folder / f"{key}{suffix}"
        self.sha_file = self.folder / (f"{key}.sha256" if suffix == ".ptx" else f"{key}{suffix}.sha256")

    def get(self) -> str | None:
        """The cached PTX if present and intact; None otherwise (after saying why, if it was there)."""
        raw = self.get_bytes()
        try:
            return None if raw is None else raw.decode()
        except UnicodeDecodeError:
            return None

    def get_bytes(self) -> bytes | None:
        """The entry's bytes if present and intact; None otherwise (after saying why, if it was there)."""
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
        if ptx_digest(raw) != want:
            _note("mismatch-" + self.key, f"cached PTX {self.key[:16]}... does not match its recorded sha256 "
                  "(modified or corrupt); recompiling")
            return None
        return raw

    def put(self, ptx: str | bytes) -> None:
        """Store the sha256, then the PTX (each file written to a temporary name and renamed, so an entry
        is never seen half written; the .ptx, last, is what makes it present); if either write fails (a
        full disk), neither file is left. Skipped if the folder is not writable."""
        data = ptx.encode() if isinstance(ptx, str) else ptx
        try:
            _atomic_write(self.sha_file, ptx_digest(data).encode() + b"\n")
            _atomic_write(self.ptx_file, data)
        except OSError as e:
            for f in (self.ptx_file, self.sha_file):
                try:
                    f.unlink()
                except OSError:
                    pass
            _note("readonly", f"PTX cache {self.folder} not writable ({e.strerror or e}); compiling without it")


def exact_path(folder: Path, sha256: str) -> Path:
    """Where the PTX of that sha256 lives in the content-addressed cache."""
    return Path(folder) / f"exact-{sha256}.ptx"


def by_digest(folder: Path, sha256: str) -> str | None:
    """The cached PTX whose bytes hash to sha256, or None (absent, unreadable, or not those bytes)."""
    path = exact_path(folder, sha256)
    try:
        if not path.is_file() or path.stat().st_size > MAX_PTX_BYTES:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    if ptx_digest(raw) != sha256:
        _note("mismatch-" + sha256, f"cached PTX {path.name} does not hash to its name (modified or corrupt); "
              "not used")
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def remember(folder: Path, ptx: str, sha256: str | None = None) -> None:
    """Keep the PTX under its sha256 in the content-addressed cache (skipped if there intact, or if the
    folder is not writable)."""
    sha256 = sha256 or ptx_digest(ptx)
    try:
        if by_digest(folder, sha256) is None:
            _atomic_write(exact_path(folder, sha256), ptx.encode())
    except OSError:
        pass


def exact_file(folder: Path, ptx: str) -> Path:
    """A file holding exactly this PTX, named by its sha256 (what a GPU loads): in the cache folder, or
    in a private temporary folder if the cache cannot be written."""
    data = ptx.encode()
    sha = ptx_digest(data)
    for base in (Path(folder), _private_tmp()):
        path = exact_path(base, sha)
        try:
            if path.is_file() and ptx_digest(path.read_bytes()) == sha:
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
