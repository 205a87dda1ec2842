"""The prover's per-query limits are z3 resource limits (a count of solver work), not the wall clock:
the limit applies to each check, not cumulatively; a query stopped by it (or by the wall-clock guard) is
`unknown` and says which stopped it; and the work z3 does on a variant in a fresh process is the same
whatever Python's hash seed, so the verdicts do not depend on the machine."""
from __future__ import annotations

import json

import pytest
import os
import subprocess
import sys
from pathlib import Path

import z3

import kreg.checker.prover.prove as prove
from kreg.checker.prover.prove import PROPS, prove_variant

from test_prover import _ops, _ptx, _variant

ROOT = Path(__file__).resolve().parent.parent


def _hard():
    """Factoring the product of two 31-bit primes: far more work than the limits below allow."""
    x, y = z3.BitVecs("x y", 64)
    return z3.And(x * y == 2147483647 * 2147483629, z3.UGT(x, 1), z3.UGT(y, 1),
                  z3.ULT(x, 1 << 32), z3.ULT(y, 1 << 32))


def test_resource_limit_is_per_check_not_cumulative(monkeypatch):
    monkeypatch.setattr(prove, "RLIMIT_PER_MS", {"bv": 1000, "int": 1000})
    monkeypatch.setattr(prove, "RLIMIT_BASE", {"bv": 0, "int": 0})
    s = z3.Solver()
    log = []
    monkeypatch.setattr(prove, "QUERY_LOG", log)
    for _ in range(3):
        s.push()
        s.add(_hard())
        r, why = prove._limited_check(s, "bv", 200, prove._Budget(60000))
        s.pop()
        assert r == z3.unknown and why.startswith("resource limit of 200000")
    # each stop used its own 200000 units (not a shared, cumulative allowance)
    assert all(200000 <= e["rlimit"] < 260000 for e in log)
    s.push()
    s.add(z3.BitVec("x", 32) == 3)
    assert prove._limited_check(s, "bv", 200, prove._Budget(60000))[0] == z3.sat
    s.pop()


def test_variant_budget_counts_solver_work_not_the_clock(monkeypatch):
    """The variant's budget is solver work: with the wall-clock guard out of the way, a clock running
    three times as fast (a slower machine, as far as the budget can tell) gives the same verdicts and
    reasons, the budget's stop among them."""
    monkeypatch.setattr(prove, "VARIANT_WALL_GUARD", 1000)
    v = _variant("tc_tile")

    def run():
        res = prove_variant(v, _ops()[v.op], _ptx("tc_tile"), timeout_ms=4000, budget_ms=1000, isolate=False)
        return {p: (r.status, r.scope, r.reason) for p, r in res.items()}
    quiet = run()
    assert any("work budget of the variant exhausted" in (r or "") for _, _, r in quiet.values())
    real = prove.time.monotonic
    t0 = real()
    monkeypatch.setattr(prove.time, "monotonic", lambda: t0 + 3 * (real() - t0))
    assert run() == quiet


def _corpus(name):
    v = _variant(name)
    return prove_variant(v, _ops()[v.op], _ptx(name), timeout_ms=4000, budget_ms=12000, isolate=False)


def test_resource_stop_is_unknown_and_says_so(monkeypatch):
    monkeypatch.setattr(prove, "RLIMIT_PER_MS", {"bv": 1, "int": 1})
    monkeypatch.setattr(prove, "RLIMIT_BASE", {"bv": 0, "int": 0})
    res = _corpus("rows_shared")
    assert all(res[p].status != "refuted" for p in PROPS)
    assert all(res[p].status != "proven" or res[p].scope != "all-dims" for p in PROPS)
    # stopped by the query's limit or, once those stops have used it up, the variant's (also rlimit units)
    assert any("resource limit of" in (res[p].reason or "") or "work budget of the variant" in (res[p].reason or "")
               for p in PROPS)
    assert not any("wall-clock" in (res[p].reason or "") for p in PROPS)


def test_wall_clock_guard_is_reported_as_such(monkeypatch):
    monkeypatch.setattr(prove, "RLIMIT_PER_MS", {"bv": 10 ** 9, "int": 10 ** 9})
    monkeypatch.setattr(prove, "WALL_GUARD", 1e-3)     # 1 ms a query
    res = _corpus("rows_shared")
    assert all(res[p].status != "refuted" for p in PROPS)
    assert any("wall-clock guard of 1 ms" in (res[p].reason or "") for p in PROPS)


def test_solver_work_does_not_depend_on_the_hash_seed(tmp_path):
    """A fresh process (as verify's proof stage is) does the same solver work whatever Python's hash seed
    (the symbolic executor iterates over sets of register names, so the main context's term ids change
    with it): the terms are copied into a context of their own, so z3 sees the same problem."""
    logs = []
    for seed in ("1", "2", "3"):
        out = tmp_path / f"log{seed}.jsonl"
        subprocess.run([sys.executable, str(ROOT / "bench" / "prover_rlimit.py"), "--sets", "corpus",
                        "--only", "matmul_tiled", "--log", str(out)], check=True, capture_output=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}, cwd=ROOT, timeout=300)
        logs.append([(e["kind"], e["result"], e["rlimit"]) for e in map(json.loads, out.read_text().splitlines())])
    assert logs[0] == logs[1] == logs[2] and logs[0]
