"""prover-0.12: what is in flight where a loop iteration starts (cp.async copies, wgmma reads, writes not yet
fenced for the async proxy) is bounded by the waits and fences every iteration runs first (checker/prover/loops.py
prefix_plan, carry), so a wgmma pipeline that leaves a step's wgmmas and the next steps' copies in flight
across the loop's back edge is proven (tests/data/prover_corpus wg_pipe, wg_pipe4), and the same pipeline with a
stage refilled while a wgmma may still read it is never proven, however large the budget."""
from __future__ import annotations


import pytest

from kreg.checker.ptx import parse as P
from kreg.checker.prover.loops import prefix_plan
from kreg.checker.ptx.cfg import find_loops

from helpers.prover_corpus import LABELS, corpus_prove, corpus_ptx


def _plan(name):
    k = P.parse(corpus_ptx(name)).kernel(name)
    loops = find_loops(k)
    plans = [prefix_plan(k, L, loops) for L in loops.values()]
    return max(plans, key=len)


def test_prefix_plan_walks_a_whole_round_of_steps():
    """wg_pipe4's main loop is one round of four steps without a branch that counts: every step's cp.async
    wait (leaving one group), fence and wgmma wait (leaving one group) is in the plan, with the barriers, the
    async events (8 copies, the wait, 4 wgmmas, the wait a step) and the commit groups before it."""
    plan = _plan("wg_pipe4")
    assert [s.kind for s in plan] == ["cp_wait", "fence", "wg_wait"] * 4
    assert [s.left for s in plan if s.kind != "fence"] == [1, 1] * 4
    assert [s.bars for s in plan] == [b for j in range(4) for b in (j, j, j + 1)]
    assert [s.events for s in plan if s.kind == "wg_wait"] == [14, 28, 42, 56]
    assert [s.cp_commits for s in plan if s.kind == "cp_wait"] == [0, 1, 2, 3]
    assert [s.wg_commits for s in plan if s.kind == "wg_wait"] == [1, 2, 3, 4]


def test_prefix_plan_stops_at_the_loop_exit_test():
    """wg_cp waits for all its copies inside its loop, then leaves it at the end: the plan holds that one
    step; its epilogue loop has none."""
    plan = _plan("wg_cp")
    assert [(s.kind, s.left) for s in plan] == [("cp_wait", None), ("fence", None), ("wg_wait", 0)]


@pytest.mark.parametrize("name", ["wg_pipe", "wg_pipe4"])
def test_wgmma_pipeline_in_flight_across_the_back_edge_is_proven(name):
    """At the budget of its label (60 s of solver work)."""
    assert LABELS[name]["budget_ms"] >= 60000
    res = corpus_prove(name)
    for p, v in res.items():
        assert v.status == "proven", f"{name}: {p} {v.status}: {v.reason}"
    assert res["race_free"].scope is not None


@pytest.mark.parametrize("name", ["bug_wg_pipe_two_stages", "bug_wg_pipe_wait2"])
def test_stage_refilled_in_flight_is_never_proven(name):
    """With a budget that lets every query finish, the race stays: refuted, or a possible violation whose
    witness rests on over-approximated values (the landing and retiring points of the async accesses). Its
    label's budget is 90 s of solver work."""
    assert LABELS[name]["budget_ms"] >= 90000
    res = corpus_prove(name)
    v = res["race_free"]
    assert v.status != "proven", f"{name}: race_free wrongly proven ({v.scope})"
    assert "budget" not in (v.reason or ""), v.reason
