"""A stage's child killed at the host-memory limit (KREG_MEMORY_MB) is the machine, not the kernel: an
environment error (verdict `error`, `kreg verify` exits 3), never failed numerics, nothing stored."""
import json

from kreg import isolate, pipeline
from kreg.cli import EXIT_ENV, main
from kreg.registry.catalog import load_catalog
from kreg.registry.store import Store

_run = isolate.run


def _numerics_limited_to(mb: int):
    """isolate.run with the real memory limit mb on the numerics stage only (the other stages unlimited)."""
    def run(fn, *args, **kw):
        return _run(fn, *args, **kw | {"memory_mb": mb if fn is pipeline.numerics_stage else None})
    return run


def test_numerics_over_the_memory_limit_is_an_environment_error(monkeypatch):
    monkeypatch.setattr(pipeline.isolate, "run", _numerics_limited_to(1))    # any Python child exceeds 1 MB
    cat = load_catalog()
    e = cat.find("add/add_bf16_safe")
    stored = []
    r = pipeline.verify_variant(e, cat.ops[e.op], "cpu", pipeline.Options(prove=False, memory_mb=1),
                                record=lambda stage, res: stored.append(stage))
    assert r.verdict == "error" and r.numerics == "not-run" and not r.complete, r.reasons
    assert "numerics not decided" in r.environment_error and "KREG_MEMORY_MB=1" in r.environment_error
    assert stored == []


def test_kreg_verify_exits_3_and_stores_nothing_when_numerics_hit_the_memory_limit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    monkeypatch.setattr(pipeline.isolate, "run", _numerics_limited_to(1))
    assert main(["verify", "add_bf16_safe", "--no-prove", "--json"]) == EXIT_ENV
    got = json.loads(capsys.readouterr().out)["variants"][0]
    assert got["verdict"] == "error" and got["numerics"] == "not-run"
    assert any("memory limit" in why and "KREG_MEMORY_MB" in why for why in got["reasons"]), got["reasons"]
    assert Store().query(stage="numerics") == [] and Store().query(stage="verdict") == []
