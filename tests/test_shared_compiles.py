"""helpers/ptx_cache.py: a compile one worker made reaches another worker's KREG_HOME as plain files that kreg
reads as its own cache entries (no NVRTC run), and a corrupted shared entry is not trusted."""
from __future__ import annotations

import pytest

from kreg.checker.ptx import compile as C

from helpers.ptx_cache import entry_files, share_compiles

SRC = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = %s; }\n'


def _sources():
    return [(SRC % "1.0f", "one.cu", ()), (SRC % "2.0f", "two.cu", ("-lineinfo",))]


def _no_nvrtc(monkeypatch):
    def refused(*a, **k):
        raise AssertionError("NVRTC ran although the session had made this compile")
    monkeypatch.setattr(C, "_nvrtc_run", refused)


def test_a_compile_made_by_one_worker_is_read_by_another_without_nvrtc(tmp_path, monkeypatch):
    session = tmp_path / "session"
    session.mkdir()
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "worker0"))
    share_compiles(str(session), _sources())
    made = {s: (C.compile_cuda(*s).ptx, C.assemble_cuda(*s)) for s in _sources()}
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "worker1"))
    _no_nvrtc(monkeypatch)
    share_compiles(str(session), _sources())
    for s, (ptx, asm) in made.items():
        got = C.compile_cuda(*s)
        assert got.cached and got.ptx == ptx and C.assemble_cuda(*s) == asm
        for f in entry_files(s[0], s[2]):
            path = C.cache_dir() / f
            assert path.is_file() and not path.is_symlink() and path.resolve().is_relative_to(tmp_path / "worker1")
    assert C.cached_ptx(C.compile_cuda(*_sources()[0]).sha256) == made[_sources()[0]][0]


def test_a_corrupted_shared_entry_is_recompiled_not_used(tmp_path, monkeypatch):
    session = tmp_path / "session"
    session.mkdir()
    source = _sources()[:1]
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "worker0"))
    share_compiles(str(session), source)
    good = C.compile_cuda(*source[0]).ptx
    (shared,) = [p for p in (session / "ptx-cache").iterdir() if p.is_dir()]
    ptx_file = shared / entry_files(source[0][0], ())[1].name
    ptx_file.write_text(ptx_file.read_text() + "// changed after it was published\n")
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "worker1"))
    share_compiles(str(session), source)
    again = C.compile_cuda(*source[0])
    assert not again.cached and again.ptx == good
    _no_nvrtc(monkeypatch)
    assert C.compile_cuda(*source[0]).cached        # the bad copy replaced by this worker's own compile


def test_the_registry_sources_are_every_distinct_compile_of_the_registry():
    from kreg.registry.catalog import load_catalog
    from helpers.ptx_cache import registry_sources
    cat = load_catalog()
    got = registry_sources()
    want = {(e.variant.source_path.name, tuple(e.variant.options)) for e in cat.entries if not e.variant.library}
    assert len(got) == len(want) == len({(n, o) for _, n, o in got}) and {(n, o) for _, n, o in got} == want


def test_the_test_that_triggers_the_sharing_exists():
    from helpers.paths import ROOT
    from helpers.ptx_cache import EVERY_COMPILE
    text = (ROOT / "tests" / "checker" / "ptx" / "test_toolchain_hazards.py").read_text()
    assert f"def {EVERY_COMPILE}(" in text and "assembled_hazards" in text
