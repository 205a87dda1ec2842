"""The PTX cache (item f) is trusted no further than its recorded sha256: a replaced or corrupt PTX is
recompiled (and kreg says so), a cache folder that cannot be written is no error."""
import os

import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.ptx import cache as ptx_cache
from kreg.checker.ptx.cache import PtxCache, exact_file

SRC = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 2.0f; }\n'
OTHER = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 3.0f; }\n'


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    monkeypatch.setattr(ptx_cache, "_warned", set())     # each note is said once per process
    return tmp_path


def _entries(home):
    """The entries found by compile key (the content-addressed `exact-<sha256>.ptx` files aside)."""
    return sorted(p for p in (home / "cache" / "ptx").iterdir() if not p.name.startswith("exact-"))


def test_an_entry_is_the_ptx_and_its_sha256(home):
    a = compile_cuda(SRC)
    ptx, sha = _entries(home)
    assert ptx.suffix == ".ptx" and sha.suffix == ".sha256" and sha.read_text().strip() == a.sha256
    b = compile_cuda(SRC)
    assert b.cached and b.ptx == a.ptx


def test_a_replaced_ptx_is_recompiled_and_reported(home, capsys):
    good = compile_cuda(SRC)
    ptx_file = _entries(home)[0]
    ptx_file.write_text(compile_cuda(OTHER, use_cache=False).ptx)
    again = compile_cuda(SRC)
    assert not again.cached and again.ptx == good.ptx
    assert "does not match its recorded sha256 (modified or corrupt); recompiling" in capsys.readouterr().err
    assert ptx_file.read_text() == good.ptx            # and the entry is repaired
    assert compile_cuda(SRC).cached


def test_an_entry_without_its_sha256_is_not_trusted(home, capsys):
    compile_cuda(SRC)
    _entries(home)[1].unlink()
    assert not compile_cuda(SRC).cached
    assert "no recorded sha256" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cache_is_skipped(home, capsys):
    (home / "cache" / "ptx").mkdir(parents=True)
    os.chmod(home / "cache" / "ptx", 0o500)
    try:
        c = compile_cuda(SRC)
        assert not c.cached and ".entry k" in c.ptx
        assert "not writable" in capsys.readouterr().err
        assert exact_file(home / "cache" / "ptx", c.ptx).read_text() == c.ptx   # a temporary folder instead
    finally:
        os.chmod(home / "cache" / "ptx", 0o700)


def test_a_cache_that_cannot_be_written_is_skipped(home, capsys):
    (home / "cache").mkdir()
    (home / "cache" / "ptx").write_text("a file where the folder should be")
    c = compile_cuda(SRC)
    assert not c.cached and ".entry k" in c.ptx
    assert "compiling without it" in capsys.readouterr().err
    assert PtxCache(home / "cache" / "ptx", "0" * 64).get() is None
    assert exact_file(home / "cache" / "ptx", c.ptx).read_text() == c.ptx


def test_the_assembled_cubin_is_cached_and_a_replaced_one_is_not_used(home, capsys):
    from kreg.checker.ptx.compile import assemble_cuda
    ptx, cubin = assemble_cuda(SRC)
    entry = next(p for p in _entries(home) if p.name.endswith("-sm_90.cubin"))
    assert entry.read_bytes() == cubin and assemble_cuda(SRC) == (ptx, cubin)
    entry.write_bytes(assemble_cuda(OTHER, use_cache=False)[1])
    assert assemble_cuda(SRC) == (ptx, cubin)            # assembled again: the replaced cubin is not used
    assert "does not match its recorded sha256" in capsys.readouterr().err
