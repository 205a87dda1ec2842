"""The content-addressed PTX cache: a compile keeps its PTX under its sha256 (ptx_digest), the engine
loads a proven PTX from there by the sha256 the store names, bytes checked, and compiles only on a miss."""
import pytest

from kreg import runtime
from kreg.checker.ptx import cache as ptx_cache
from kreg.checker.ptx.compile import cache_dir, cached_ptx, compile_cuda
from kreg.checker.ptx.digest import ptx_digest
from kreg.engine import plan
from kreg.engine.errors import EngineError
from kreg.registry.catalog import load_catalog


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    monkeypatch.setattr(ptx_cache, "_warned", set())
    return tmp_path


@pytest.fixture(scope="module")
def entry():
    return next(e for e in load_catalog().entries if e.name == "add_bf16_safe")


def _compile(e):
    v = e.variant
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)


def test_a_compile_is_found_by_its_sha256(home, entry):
    c = _compile(entry)
    assert c.sha256 == ptx_digest(c.ptx) and cached_ptx(c.sha256) == c.ptx
    assert cached_ptx("0" * 64) is None


def test_the_engine_loads_the_proven_ptx_from_the_cache_without_compiling(home, entry, monkeypatch):
    c = _compile(entry)

    def no_compile(*a, **k):
        raise AssertionError("compiled although the PTX is cached")
    monkeypatch.setattr(plan, "compile_cuda", no_compile)
    module = plan._load(runtime.device("cpu"), entry, c.sha256)
    assert module.sha256 == c.sha256 and module.ptx == c.ptx


def test_a_cached_ptx_that_is_not_its_bytes_is_not_loaded(home, entry, capsys):
    c = _compile(entry)
    path = cache_dir() / f"exact-{c.sha256}.ptx"
    path.write_text(c.ptx.replace("add", "sub", 1))          # other bytes under the proven name
    assert cached_ptx(c.sha256) is None
    assert "does not hash to its name" in capsys.readouterr().err
    module = plan._load(runtime.device("cpu"), entry, c.sha256)   # a miss: compiled, and checked
    assert module.sha256 == c.sha256 and module.ptx == c.ptx
    assert cached_ptx(c.sha256) == c.ptx                           # and the entry made whole again


def test_a_sha256_this_nvrtc_does_not_emit_is_refused(home, entry):
    with pytest.raises(EngineError, match="that was verified"):
        plan._load(runtime.device("cpu"), entry, "f" * 64)
