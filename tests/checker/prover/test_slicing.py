"""The cone of influence an integer query is built from (checker/prover/slicing.py): it keeps the launch's own
constraints, the facts a fresh symbol of the goal reaches and the facts on the core's symbols alone; a slice is a
subsequence of the whole query (so its unsat is the whole's); a slice that is not unsat leaves the query to the whole
one; and a slicing that drops a fact the goal needs never proves a violating kernel."""
from __future__ import annotations

import pytest
import z3

import kreg.checker.prover.prove as prove
import kreg.checker.prover.solving as solving
from kreg.checker.prover.env import LaunchEnv
from kreg.checker.prover.records import Record, RecordMiss, Replay
from kreg.checker.prover.slicing import Cone
from kreg.checker.prover.symbolic import Executor
from kreg.checker.ptx import parse as P

from helpers.prover_corpus import LABELS, corpus_ops, corpus_ptx, corpus_variant

x, y, z, w, n = (z3.BitVec(s, 32) for s in "xyzwn")
CORE = [z3.ULT(x, 1000), z3.ULT(n, 64)]
FACTS = [y == x + 1, z3.ULE(z, y), z3.ULT(w, 5), z3.ULE(x, n * 16)]   # y, z chained; w apart; the last on x, n alone


def test_cone_keeps_what_the_goal_reaches_and_facts_on_core_symbols():
    cone = Cone(CORE, FACTS)
    assert cone.of(z3.UGT(z, 1001)) == [0, 1, 3]      # z -> ULE(z, y) -> y == x + 1; x, n: the core's
    assert cone.of(z3.UGT(y, 3)) == [0, 1, 3]         # y reaches z through ULE(z, y)
    assert cone.of(z3.UGT(w, 7)) == [2, 3]
    assert cone.of(z3.UGT(x, 7)) == [3]               # no fresh symbol: the facts on core symbols only
    assert cone.slice(z3.UGT(w, 7)) == [*CORE, FACTS[2], FACTS[3]]


def test_sliced_integer_query_proves_through_the_chain_and_leaves_out_the_rest():
    ints = solving.IntSolver([*CORE, *FACTS], solving.Budget(60000), core=len(CORE))
    goal = z3.UGT(z, 1001)                   # z <= y = x + 1 <= 1000: unsat only through both chained facts
    assert ints.refutes(goal, 1000)
    names = {t.decl().name() for t in _consts(ints.query(goal))}
    assert {"iv_x", "iv_y", "iv_z"} <= names and "iv_w" not in names
    assert not ints.refutes(z3.UGT(z, 999), 1000)     # z = y = 1000 with x = 999: satisfiable


def test_a_slice_that_drops_a_needed_fact_leaves_it_to_the_whole_query(monkeypatch):
    monkeypatch.setattr(Cone, "of", lambda self, f: list(self.always))
    budget = solving.Budget(60000)
    ints = solving.IntSolver([*CORE, *FACTS], budget, core=len(CORE))
    assert ints.refutes(z3.UGT(z, 1001), 1000)         # without the chain z is free: the slice is sat
    assert [c[1:3] for c in budget.log.calls] == [("slice", "sat"), ("smt", "unsat")]
    monkeypatch.setattr(solving, "INT_STEPS", solving.INT_STEPS[:1])      # the slice alone decides nothing
    assert not solving.IntSolver([*CORE, *FACTS], solving.Budget(60000), core=len(CORE)).refutes(z3.UGT(z, 1001), 1000)


def test_a_record_claiming_the_slice_closed_an_open_query_is_a_miss(monkeypatch):
    monkeypatch.setattr(Cone, "of", lambda self, f: list(self.always))
    budget = solving.Budget(60000)
    goal = z3.UGT(z, 1001)
    assert solving.IntSolver([*CORE, *FACTS], budget, core=len(CORE)).refutes(goal, 1000)
    (kind, _, _, units, key), _ = budget.log.calls
    forged = Record("sha", "v", [[kind, "slice", "unsat", units, key]], {}, [], [])
    replay = solving.IntSolver([*CORE, *FACTS], solving.Budget(60000, Replay(forged)), core=len(CORE))
    with pytest.raises(RecordMiss):
        replay.refutes(goal, 1000)


def test_a_cone_that_is_the_whole_query_runs_it_once():
    budget = solving.Budget(60000)
    ints = solving.IntSolver([*CORE, *FACTS], budget, core=len(CORE))
    assert ints.refutes(z3.And(z3.UGT(z, 1001), z3.ULT(w, 9)), 1000)     # reaches every fact
    assert [c[1:3] for c in budget.log.calls] == [("smt", "unsat")]


def _consts(fs):
    out, todo, seen = set(), list(fs), set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(t)
        todo += t.children()
    return out


def _launch(name):
    v, op = corpus_variant(name), corpus_ops()[corpus_variant(name).op]
    module = P.parse(corpus_ptx(name))
    env = LaunchEnv(v, op, module, v.launches[0])
    ta, tb = (Executor(module.kernel(name), module, env, t).run_kernel() for t in "AB")
    core = [*env.constraints, *env.thread_constraints("A"), *env.thread_constraints("B")]
    return core, [*ta.defs, *tb.defs], ta


@pytest.mark.parametrize("name", ["matmul_tiled", "bug_tc_no_wait"])
def test_slice_is_a_subsequence_of_the_whole_query(name):
    """Each access's integer query, sliced, is the whole query less some formulas, in the same order: any model of
    the whole is one of the slice, so the slice's unsat is the whole's."""
    core, facts, ta = _launch(name)
    sliced = solving.IntSolver([*core, *facts], solving.Budget(60000), core=len(core))
    whole = solving.IntSolver([*core, *facts], solving.Budget(60000))
    assert facts, "the kernel has facts to slice"
    dropped = 0
    for a in ta.accesses[:12]:
        goal = z3.And(a.pc, z3.ULT(a.addr, 1 << 16))      # below every buffer: what in_bounds asks
        s, f = [q.sexpr() for q in sliced.query(goal)], [q.sexpr() for q in whole.query(goal)]
        it = iter(f)
        assert all(any(q == r for r in it) for q in s), "a sliced query holds a formula the whole does not"
        dropped += len(f) - len(s)
    assert dropped > 0, "nothing was left out of any query"


BUGGY_WITH_FACTS = ["bug_tc_no_wait", "bug_matmul_one_barrier"]


@pytest.mark.parametrize("name", BUGGY_WITH_FACTS)
def test_dropping_every_fact_never_proves_a_buggy_kernel(monkeypatch, name):
    """The most a slicing can drop (every fact symbolic execution added), with no whole query after it, still
    leaves the broken property unproven: dropping hypotheses only weakens a query."""
    monkeypatch.setattr(Cone, "of", lambda self, f: [])
    monkeypatch.setattr(solving, "INT_STEPS", solving.INT_STEPS[:1])
    v = corpus_variant(name)
    got = prove.prove(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=4000, budget_ms=12000,
                      isolate=False).verdicts
    prop = LABELS[name]["breaks"]
    assert got[prop].status != "proven", f"{name}: {prop} proven with every fact dropped"
