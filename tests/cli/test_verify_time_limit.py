"""A stage's child killed at its wall-clock limit (--timeout) is the machine as much as the kernel (load, large
cases' float64 references): an environment error (verdict `error`, `kreg verify` exits 3), never failed numerics,
nothing stored. A kernel that loops forever is rejected by the emulator's step budget instead
(tests/cli/test_broken_variants.py, broken_hangs)."""
import json

from kreg import isolate, pipeline
from kreg.cli import EXIT_ENV, main
from kreg.registry.catalog import load_catalog
from kreg.registry.store import Store

_run = isolate.run


def _numerics_limited_to(seconds: float):
    """isolate.run with the real wall-clock limit `seconds` on the numerics stage only."""
    def run(fn, *args, **kw):
        return _run(fn, *args, **kw | ({"timeout_s": seconds} if fn is pipeline.numerics_stage else {}))
    return run


def test_numerics_past_the_time_limit_is_an_environment_error(monkeypatch):
    monkeypatch.setattr(pipeline.isolate, "run", _numerics_limited_to(0.05))   # no child starts in 50 ms
    cat = load_catalog()
    e = cat.find("add/add_bf16_safe")
    stored = []
    r = pipeline.verify_variant(e, cat.ops[e.op], "cpu", pipeline.Options(prove=False),
                                record=lambda stage, res: stored.append(stage))
    assert r.verdict == "error" and r.numerics == "not-run" and not r.complete, r.reasons
    assert "numerics not decided" in r.environment_error and "time limit" in r.environment_error
    assert stored == []


def test_kreg_verify_exits_3_and_stores_nothing_when_numerics_hit_the_time_limit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    monkeypatch.setattr(pipeline.isolate, "run", _numerics_limited_to(0.05))
    assert main(["verify", "add_bf16_safe", "--no-prove", "--json"]) == EXIT_ENV
    got = json.loads(capsys.readouterr().out)["variants"][0]
    assert got["verdict"] == "error" and got["numerics"] == "not-run"
    assert any("time limit" in why and "--timeout" in why for why in got["reasons"]), got["reasons"]
    assert Store().query(stage="numerics") == [] and Store().query(stage="verdict") == []
