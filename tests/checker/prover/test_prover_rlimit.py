"""The prover's limits are z3 resource limits (a count of solver work), not the clock (checker/prover/solving.py):
the limit applies to each check, not cumulatively; a query stopped by it is `unknown` and says so; the clock
guards only stop work (WallClockStop: nothing decided), and a clock running faster changes no verdict."""
from __future__ import annotations

import pytest
import z3

import kreg.checker.prover.prove as prove
import kreg.checker.prover.solving as solving
from kreg.checker.prover.prove import PROPS, prove_variant

from helpers.prover_corpus import corpus_ops, corpus_ptx, corpus_variant


def _hard():
    """Factoring the product of two 31-bit primes: far more work than the limits below allow."""
    x, y = z3.BitVecs("x y", 64)
    return z3.And(x * y == 2147483647 * 2147483629, z3.UGT(x, 1), z3.UGT(y, 1),
                  z3.ULT(x, 1 << 32), z3.ULT(y, 1 << 32))


def test_resource_limit_is_per_check_not_cumulative(monkeypatch):
    monkeypatch.setattr(solving, "RLIMIT_PER_MS", {"bv": 1000, "int": 1000})
    monkeypatch.setattr(solving, "RLIMIT_BASE", {"bv": 0, "int": 0})
    s = z3.SimpleSolver()
    budget = solving.Budget(60000)
    for _ in range(3):
        s.push()
        s.add(_hard())
        r, why = solving.limited_check(s, "bv", "smt", 200, budget)
        s.pop()
        assert r == z3.unknown and why.startswith("resource limit of 200000")
    # each stop used its own 200000 units (not a shared, cumulative allowance), and the log has each
    assert [c[:3] for c in budget.log.calls] == [("bv", "smt", "unknown")] * 3
    assert all(200000 <= c[3] < 260000 for c in budget.log.calls)
    s.push()
    s.add(z3.BitVec("x", 32) == 3)
    assert solving.limited_check(s, "bv", "smt", 200, budget)[0] == z3.sat
    s.pop()


def test_clock_guard_stops_the_work_and_decides_nothing(monkeypatch):
    """A query whose CPU-time guard runs out is not `unknown`: WallClockStop, which the pipeline reports as an
    environment error (nothing stored)."""
    monkeypatch.setattr(solving, "RLIMIT_PER_MS", {"bv": 10 ** 9, "int": 10 ** 9})
    monkeypatch.setattr(solving, "MIN_GUARD_S", 0.2)
    monkeypatch.setattr(solving, "WALL_GUARD", 1e-3)
    s = z3.SimpleSolver()
    s.add(_hard())
    with pytest.raises(solving.WallClockStop, match="CPU-time guard"):
        solving.limited_check(s, "bv", "smt", 200, solving.Budget(60000))


def test_variant_budget_counts_solver_work_not_the_clock(monkeypatch):
    """With the clock guards out of the way, a clock running three times as fast (a slower machine, as far
    as the budget can tell) gives the same verdicts, reasons and work digest, the budget's stop among them."""
    monkeypatch.setattr(solving, "VARIANT_WALL_GUARD", 1000)
    monkeypatch.setattr(solving, "WALL_GUARD", 1000)
    v = corpus_variant("tc_tile")

    def run():
        res = prove.prove(v, corpus_ops()[v.op], corpus_ptx("tc_tile"), timeout_ms=4000, budget_ms=1000, isolate=False)
        return {p: (r.status, r.scope, r.reason) for p, r in res.verdicts.items()}, res.work["digest"]
    quiet = run()
    assert any("work budget of the variant exhausted" in (r or "") for _, _, r in quiet[0].values())
    real = solving.time.process_time
    t0 = real()
    monkeypatch.setattr(solving.time, "process_time", lambda: t0 + 3 * (real() - t0))
    assert run() == quiet


def test_resource_stop_is_unknown_and_says_so(monkeypatch):
    monkeypatch.setattr(solving, "RLIMIT_PER_MS", {"bv": 1, "int": 1})
    monkeypatch.setattr(solving, "RLIMIT_BASE", {"bv": 0, "int": 0})
    v = corpus_variant("rows_shared")
    res = prove_variant(v, corpus_ops()[v.op], corpus_ptx("rows_shared"), timeout_ms=4000, budget_ms=12000, isolate=False)
    assert all(res[p].status != "refuted" for p in PROPS)
    assert all(res[p].status != "proven" or res[p].scope != "all-dims" for p in PROPS)
    # stopped by the query's limit or, once those stops have used it up, the variant's (also rlimit units)
    assert any("resource limit of" in (res[p].reason or "") or "work budget of the variant" in (res[p].reason or "")
               for p in PROPS)
    assert not any("clock" in (res[p].reason or "") for p in PROPS)
