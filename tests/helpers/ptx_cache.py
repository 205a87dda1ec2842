"""The registry's compiles made once per test session for all pytest-xdist workers: each worker walks the
registry's sources and, for each one no other worker holds, compiles and assembles it in its own KREG_HOME
(compile_cuda, assemble_cuda) and publishes the finished cache entries in the session's folder; a source
another worker made is copied from there into this worker's $KREG_HOME/cache/ptx. Copies are plain files
inside $KREG_HOME (never links: kreg refuses paths out of it); cache entries are keyed by the compile's
inputs (source, headers, options, compiler) and read through their recorded sha256 as always, so an entry
made by another worker is the one this worker would make."""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from kreg.checker.ptx import compile as C
from kreg.checker.ptx.cache import PtxCache, exact_path
from kreg.checker.ptx.digest import ptx_digest

EVERY_COMPILE = "test_no_shipped_kernel_has_a_hazard"     # a test that compiles and assembles every registry source:
                                                          # sessions that run it share the compiles (tests/conftest.py)


def registry_sources() -> list[tuple[str, str, tuple]]:
    """(source text, file name, options) of every distinct compile of the registry, in catalog order."""
    from kreg.registry.catalog import load_catalog
    seen, out = set(), []
    for e in load_catalog().entries:
        v = e.variant
        if v.library:             # a vendor routine: no source of kreg's
            continue
        key = (v.source_path, tuple(v.options))
        if key in seen:
            continue
        seen.add(key)
        out.append((v.source_path.read_text(), v.source_path.name, tuple(v.options)))
    return out


def entry_files(source: str, options) -> list[Path]:
    """The cache files (relative to the cache folder) that compile_cuda and assemble_cuda of it leave."""
    key = C._key(source, options)
    files = []
    for e in (PtxCache(Path(), key), PtxCache(Path(), key + "-sm_90"), PtxCache(Path(), key + "-sm_90", ".cubin")):
        files += [e.sha_file, e.ptx_file]
    return files


def _make(source: str, name: str, options, folder: Path) -> None:
    """Compile and assemble here, then publish the entries under folder (a finished folder appears whole)."""
    ptx = C.compile_cuda(source, name, options).ptx
    C.assemble_cuda(source, name, options)
    tmp = folder.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in entry_files(source, options) + [exact_path(Path(), ptx_digest(ptx))]:
        shutil.copyfile(C.cache_dir() / f, tmp / f.name)
    tmp.rename(folder)


def _take(folder: Path) -> None:
    """Copy a published entry into this worker's cache (plain files, each written whole then renamed)."""
    dest = C.cache_dir()
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(folder.iterdir(), key=lambda p: p.suffix != ".sha256"):     # the sha256 first, as put() does
        tmp = dest / f".tmp-share-{f.name}"
        shutil.copyfile(f, tmp)
        os.replace(tmp, dest / f.name)


def _one(source: str, name: str, options, shared: Path, wait: bool) -> bool:
    """Make or take one source's entries; False if another worker holds it and wait is False."""
    key = C._key(source, options)
    folder = shared / key
    with open(shared / f"{key}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        if folder.is_dir():
            _take(folder)
        else:
            try:
                _make(source, name, options, folder)
            except C.CompileError:
                pass              # the tests that compile it say why
        return True


def share_compiles(session_folder: str, sources=None) -> None:
    """Every source's compile and sm_90 cubin (default: the registry's) in this worker's cache, each made by one
    worker of the session: the first pass makes or takes those no other worker holds, the second waits for the
    rest."""
    shared = Path(session_folder) / "ptx-cache"
    shared.mkdir(exist_ok=True)
    later = [s for s in (registry_sources() if sources is None else sources) if not _one(*s, shared, wait=False)]
    for s in later:
        _one(*s, shared, wait=True)
