"""Unit checks of the prover's soundness rules that the labelled corpus (tests/checker/prover/test_prover.py) exercises
only end to end: scopes never widen, predicated exits reach the exit, unrolled counters and counters
copied back at the latch are inductions, full-mask __syncwarp is recognised, grouped refutation keeps
every satisfiable query, the barrier-epoch filter drops only pairs a barrier orders."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import z3

import kreg.checker.prover.prove as prove
import kreg.checker.prover.solving as solving
from kreg.checker.ptx import parse as P
from kreg.checker.prover.loops import inductions
from kreg.checker.ptx.cfg import find_loops
from kreg.checker.prover.prove import PROPS
from kreg.registry.results import PropertyVerdict
from kreg.checker.prover.env import LaunchEnv
from kreg.checker.prover.symbolic import Executor
from kreg.checker.ptx.cfg import exit_ipdom, is_warp_sync, sync_branches

from helpers.prover_corpus import corpus_ops, corpus_ptx, corpus_variant


def _kernel(name):
    return P.parse(corpus_ptx(name)).kernel(name)


@pytest.mark.parametrize("order", [0, 1])
def test_combining_launches_never_widens_a_per_case_proof(monkeypatch, order):
    scopes = ["cases:one,small,big", "all-dims"]
    if order:
        scopes.reverse()
    calls = iter(scopes)

    def fake(variant, op, module, launch, timeout_ms, deadline, n=0):
        s = next(calls)
        return {p: PropertyVerdict("proven", s) for p in PROPS}
    monkeypatch.setattr(prove, "_prove_launch", fake)
    v = corpus_variant("vec_basic")
    two = SimpleNamespace(launches=[v.launches[0], v.launches[0]])
    res = prove._prove_here(two, corpus_ops()["vec"], corpus_ptx("vec_basic"), 1000, None).verdicts
    assert all(res[p].status == "proven" and res[p].scope.startswith("cases:") for p in PROPS)


def test_rely_narrows_to_the_dependency():
    allp, case = PropertyVerdict("proven", "all-dims"), PropertyVerdict("proven", "cases:a,b")
    assert prove._rely(allp, case, "x").scope == "cases:a,b"
    assert prove._rely(allp, PropertyVerdict("unknown", None, "?"), "x").status == "unknown"
    assert prove._rely(case, allp, "x").scope == "cases:a,b"
    assert prove._rely(allp, allp, "x").scope == "all-dims"


def test_predicated_exit_leads_to_the_exit():
    k = _kernel("bug_pred_exit_barrier")
    ex = next(b.id for b in k.blocks if k.instrs[b.end - 1].op == "exit" and k.instrs[b.end - 1].pred)
    assert exit_ipdom(k)[ex] == -1
    assert ex in sync_branches(k, exit_ipdom(k))


def test_unrolled_counter_is_an_induction():
    k = _kernel("rows_unrolled")
    loops = find_loops(k)
    found = [ind for L in loops.values() for ind in [inductions(k, L, loops)[0]] if ind]
    assert any(len(steps) == 4 for ind in found for _, steps in ind.values())


def test_full_mask_warp_sync_only():
    full = P.parse_instruction("bar.warp.sync -1;")
    part = P.parse_instruction("bar.warp.sync 65535;")
    assert is_warp_sync(full) and not is_warp_sync(part)
    assert not is_warp_sync(P.parse_instruction("bar.sync 0;"))


def _loop_ptx(body: str) -> P.Kernel:
    """A one-loop kernel: %r10 counts up to %r2 (a param), `body` is the loop body before the back edge."""
    return P.parse(f""".version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_p0, .param .u32 k_p1)
{{
\t.reg .pred %p<3>;
\t.reg .b32 %r<20>;
\t.reg .b64 %rd<20>;
\tld.param.u64 %rd1, [k_p0];
\tld.param.u32 %r2, [k_p1];
\tmov.u32 %r10, 0;
\tmov.u64 %rd5, 0;
$L_loop:
{body}
\tsetp.lt.s32 %p1, %r10, %r2;
\t@%p1 bra $L_loop;
\tret;
}}
""").kernel("k")


def _inductions(k):
    loops = find_loops(k)
    (L,) = loops.values()
    return inductions(k, L, loops)[0]


def test_counter_copied_back_by_mov_is_an_induction():
    # the rotated loops nvcc emits: the next value in another register, copied back at the end
    ind = _inductions(_loop_ptx("\tadd.s32 %r11, %r10, 128;\n\tmov.u32 %r10, %r11;"))
    assert "%r10" in ind and sorted(s.value for _, s in ind["%r10"][1]) == [0, 128]


def test_step_recomputed_in_the_loop_is_invariant_only_before_its_use():
    from kreg.checker.prover.loops import Remat
    before = _inductions(_loop_ptx("\tmul.wide.s32 %rd6, %r2, 512;\n\tadd.s64 %rd5, %rd5, %rd6;\n"
                                   "\tadd.s32 %r10, %r10, 1;"))
    (sign, step), = before["%rd5"][1]
    assert isinstance(step, Remat) and step.reg == "%rd6"
    # used before it is computed: the first iteration would add the value from before the loop
    after = _inductions(_loop_ptx("\tadd.s64 %rd5, %rd5, %rd6;\n\tmul.wide.s32 %rd6, %r2, 512;\n"
                                  "\tadd.s32 %r10, %r10, 1;"))
    assert "%rd5" not in after
    # computed from a value the loop changes: not a step
    varying = _inductions(_loop_ptx("\tmul.wide.s32 %rd6, %r10, 512;\n\tadd.s64 %rd5, %rd5, %rd6;\n"
                                    "\tadd.s32 %r10, %r10, 1;"))
    assert "%rd5" not in varying
    # computed on one path only (predicated): not a step
    guarded = _inductions(_loop_ptx("\tsetp.eq.s32 %p2, %r10, 3;\n\t@%p2 mul.wide.s32 %rd6, %r2, 512;\n"
                                    "\tadd.s64 %rd5, %rd5, %rd6;\n\tadd.s32 %r10, %r10, 1;"))
    assert "%rd5" not in guarded
    # a load is not pure arithmetic
    loaded = _inductions(_loop_ptx("\tld.global.u64 %rd6, [%rd1];\n\tadd.s64 %rd5, %rd5, %rd6;\n"
                                   "\tadd.s32 %r10, %r10, 1;"))
    assert "%rd5" not in loaded


def test_counter_copied_back_at_the_latch_is_an_induction():
    """A rotated loop: `add r2, r, 32; ...; mov r, r2` (the copy is a link of step 0 in the chain)."""
    k = _kernel("attn_causal_tiled")
    loops = find_loops(k)
    found = [steps for L in loops.values() for upd, steps in inductions(k, L, loops)[0].values() if upd.op == "mov"]
    assert found and all(sum(s.value for _, s in steps) % 32 == 0 and steps[0][1].value == 0 for steps in found)
    assert all(sum(s.value for _, s in steps) for steps in found)


def test_grouped_refutation_keeps_every_satisfiable_query():
    x = z3.BitVec("x", 32)
    qs = [prove._Q(x == i if i % 7 == 0 else z3.And(x == i, z3.ULT(x, 3 * i // 4)), f"q{i}") for i in range(1, 40)]
    solver = SimpleNamespace(ints=solving.IntSolver([z3.ULT(x, 1000)], solving.Budget(60000)))
    left = prove._refute_in_groups(solver, [q.formula for q in qs], 1000)
    names = [qs[i].what for i in left]
    assert {f"q{i}" for i in range(7, 40, 7)} <= set(names)          # never refuted with a group
    assert names == sorted(names, key=lambda n: int(n[1:])) and len(names) <= 3 * 5   # in order; bisected


def _race_queries(name, with_solver):
    v, op = corpus_variant(name), corpus_ops()[corpus_variant(name).op]
    module = P.parse(corpus_ptx(name))
    env = LaunchEnv(v, op, module, v.launches[0])
    ta, tb = (Executor(module.kernel(name), module, env, t).run_kernel() for t in "AB")
    base = env.constraints + env.thread_constraints("A") + env.thread_constraints("B") + ta.defs + tb.defs
    solver = SimpleNamespace(ints=solving.IntSolver(base, solving.Budget(60000)), timeout_ms=4000)
    qs = []
    just = set(range(len(ta.accesses)))
    prove._races(qs, ta.accesses, tb.accesses, just, env.buffers, prove._disjoint(env.buffers), prove._Threads(env),
                 solver if with_solver else None)
    return {(q.info["acc"][0].instr.index, q.info["acc"][1].instr.index, any(a.end is not None for a in q.info["acc"]))
            for q in qs}


def test_epoch_filter_drops_only_pairs_a_barrier_orders():
    """matmul_tiled: the tile stores and the loads of the other epoch are ordered (dropped); the
    one-barrier bug keeps its store/load pairs (they share an epoch)."""
    full, kept = _race_queries("matmul_tiled", False), _race_queries("matmul_tiled", True)
    assert kept < full
    bug_full, bug_kept = _race_queries("bug_matmul_one_barrier", False), _race_queries("bug_matmul_one_barrier", True)
    assert bug_kept == bug_full


def test_epoch_filter_keeps_a_pending_copy_with_the_reads_its_span_meets():
    """bug_tc_no_wait: the cp.async writes issued between the loop's two barriers (no wait before the
    second) are still pending after it, so they are unordered with the ldmatrix reads after it, though
    their epochs differ: the filter must keep those pairs (prover-0.7 compared issue epochs, dropped them
    and proved the kernel race-free)."""
    k = P.parse(corpus_ptx("bug_tc_no_wait")).kernel("bug_tc_no_wait")
    ops = [(i, ins.op, ins.mods) for i, ins in enumerate(k.instrs)]
    bars = [i for i, op, _ in ops if op == "bar"]
    copies = [i for i, op, m in ops if op == "cp" and "global" in m and bars[0] < i < bars[1]]
    reads = [i for i, op, _ in ops if op == "ldmatrix" and i > bars[1]]
    assert copies and reads
    kept = _race_queries("bug_tc_no_wait", True)
    assert any((w, r, True) in kept for w in copies for r in reads), sorted(q for q in kept if q[2])


def test_refuted_together_only_when_every_member_is():
    x = z3.BitVec("x", 32)
    fs = [z3.And(x == i, z3.ULT(x, i)) for i in range(50)] + [x == 7]
    solver = SimpleNamespace(ints=solving.IntSolver([z3.ULT(x, 1000)], solving.Budget(60000)), timeout_ms=3000)
    assert 50 in prove._refute_together(solver, fs)
    assert prove._refute_together(solver, fs[:20]) == set()
    assert prove._refute_together(solver, fs[:3] + [x == 7]) == {0, 1, 2, 3}        # too few to group: all left
