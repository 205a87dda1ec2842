"""A stage's child stopped by a limit of the machine's is an environment error (verdict `error`, `kreg verify` exits
3), never failed numerics, nothing stored: the host-memory limit (KREG_MEMORY_MB) and the wall-clock limit
(--timeout: the machine's load or large cases' float64 references as much as the kernel). A kernel that loops
forever is rejected by the emulator's step budget instead (tests/cli/test_broken_variants.py, broken_hangs)."""
import json

import pytest

from kreg import isolate, pipeline
from kreg.cli import EXIT_ENV, main
from kreg.registry.catalog import load_catalog
from kreg.registry.store import Store

_run = isolate.run

# limit -> (the real limit put on the numerics stage only, Options beside it, what the reasons name)
LIMITS = {
    "memory": ({"memory_mb": 1}, {"memory_mb": 1}, ("memory limit", "KREG_MEMORY_MB")),   # any Python child exceeds 1 MB
    "time": ({"timeout_s": 0.05}, {}, ("time limit", "--timeout")),                       # no child starts in 50 ms
}


def _numerics_limited(limit: str):
    """isolate.run with the real limit on the numerics stage only (the other stages' memory unlimited)."""
    def run(fn, *args, **kw):
        return _run(fn, *args, **kw | (LIMITS[limit][0] if fn is pipeline.numerics_stage else
                                       {"memory_mb": None} if limit == "memory" else {}))
    return run


@pytest.mark.parametrize("limit", LIMITS)
def test_numerics_stopped_by_a_limit_is_an_environment_error(monkeypatch, limit):
    monkeypatch.setattr(pipeline.isolate, "run", _numerics_limited(limit))
    cat = load_catalog()
    e = cat.find("add/add_bf16_safe")
    stored = []
    r = pipeline.verify_variant(e, cat.ops[e.op], "cpu", pipeline.Options(prove=False, **LIMITS[limit][1]),
                                record=lambda stage, res: stored.append(stage))
    assert r.verdict == "error" and r.numerics == "not-run" and not r.complete, r.reasons
    assert "numerics not decided" in r.environment_error
    assert ("KREG_MEMORY_MB=1" if limit == "memory" else "time limit") in r.environment_error
    assert stored == []


@pytest.mark.parametrize("limit", LIMITS)
def test_kreg_verify_exits_3_and_stores_nothing_when_numerics_hit_a_limit(tmp_path, monkeypatch, capsys, limit):
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    monkeypatch.setattr(pipeline.isolate, "run", _numerics_limited(limit))
    assert main(["verify", "add_bf16_safe", "--no-prove", "--json"]) == EXIT_ENV
    got = json.loads(capsys.readouterr().out)["variants"][0]
    assert got["verdict"] == "error" and got["numerics"] == "not-run"
    named = LIMITS[limit][2]
    assert any(all(n in why for n in named) for why in got["reasons"]), got["reasons"]
    assert Store().query(stage="numerics") == [] and Store().query(stage="verdict") == []
