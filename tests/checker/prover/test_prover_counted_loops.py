"""What the prover models for counted loops the compiler unrolls (a loop bound from a device scalar, or a dim):
an iteration is reached only if no earlier one hit the exit test `counter != E`, a fact the integer translation
keeps (an unsigned remainder of the distance), also where the test ends the block before a latch that only
branches back (a rotated remainder loop). The correct corpus kernel is proven on all four properties; every
variation whose loop can run past its buffer is not proven in bounds."""
from __future__ import annotations

import pytest

from kreg.checker.prover.prove import PROPS, prove
from kreg.checker.ptx.compile import compile_cuda

from helpers.prover_corpus import corpus_ops, corpus_prove, corpus_ptx, corpus_variant

DEVLEN = 'extern "C" __global__ void devlen_sum(const int* __restrict__ n, const float* __restrict__ x, ' \
         'float* __restrict__ out, int S, int H) {{\n' \
         '    int h = blockIdx.x * blockDim.x + threadIdx.x;\n    if (h >= H) return;\n' \
         '    int len = n[0];\n    float acc = 0.f;\n    {body}\n    out[h] = acc;\n}}\n'

BROKEN = {
    # one past the scalar's range: len + 1 rows (n[0] may be S)
    "bound_plus_one": "for (int j = 0; j < len + 1; ++j) acc += x[(size_t)j * H + h];",
    # a remainder loop entered with no remainder: the bottom test (--r != 0) first sees -1, and runs on
    "remainder_do_while": "int r = len & 3, j = len - r;\n"
                          "    do { acc += x[(size_t)j * H + h]; ++j; } while (--r != 0);",
    # unrolled by hand, the tail read without a bound: up to three rows past len
    "unrolled_tail": "for (int j = 0; j < len; j += 4) acc += x[(size_t)j * H + h] + x[(size_t)(j + 3) * H + h];",
    # a step of 2 tested with !=: an odd len is never hit
    "step2_ne": "for (int j = 0; j != len; j += 2) acc += x[(size_t)j * H + h];",
}


# devlen_sum's remainder loop as the compiler leaves it (the test ends the latch), and rotated: the exit test
# ends the block before a latch that only branches back (as nvcc writes mma_store_frag's remainder loop)
TAIL = "\tsetp.ne.s32 \t%p6, %r22, 0;\n\t@%p6 bra \t$L__BB0_8;\n\tbra.uni \t$L__BB0_9;\n"
ROTATED = "\tsetp.eq.s32 \t%p6, %r22, {e};\n\t@%p6 bra \t$L__BB0_9;\n\tbra.uni \t$L__BB0_8;\n"
ROTATED_BROKEN = {
    # counts down past zero to -1: one iteration more, the row at len
    "exit_at_minus_one": ROTATED.format(e=-1),
    # the test inverted: continues exactly when the counter reached zero
    "continue_at_zero": "\tsetp.eq.s32 \t%p6, %r22, 0;\n\t@%p6 bra \t$L__BB0_8;\n\tbra.uni \t$L__BB0_9;\n",
}


def _prove(body):
    v = corpus_variant("devlen_sum")
    return _prove_ptx(compile_cuda(DEVLEN.format(body=body), "devlen_sum.cu", v.options).ptx)


def _prove_ptx(ptx):
    v = corpus_variant("devlen_sum")
    return prove(v, corpus_ops()[v.op], ptx, timeout_ms=4000, budget_ms=12000, isolate=False).verdicts


def _rotated(tail):
    ptx = corpus_ptx("devlen_sum")
    assert ptx.count(TAIL) == 1, "devlen_sum's remainder loop is no longer compiled as this test expects"
    return ptx.replace(TAIL, tail)


def test_device_scalar_bound_is_proven_for_all_dims():
    res = corpus_prove("devlen_sum")
    assert all(res[p].status == "proven" and res[p].scope == "all-dims" for p in PROPS), \
        {p: (res[p].status, res[p].reason) for p in PROPS}


def test_the_same_loop_written_correctly_here_is_proven():
    # the template itself is sound: the broken variations below differ only in the loop
    res = _prove("for (int j = 0; j < len; ++j) acc += x[(size_t)j * H + h];")
    assert res["in_bounds"].status == "proven" and res["in_bounds"].scope == "all-dims", res["in_bounds"].reason


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_variation_is_not_proven(name):
    res = _prove(BROKEN[name])
    assert res["in_bounds"].status != "proven", f"{name}: in_bounds wrongly proven"


def test_buggy_sibling_is_refuted():
    assert corpus_prove("bug_devlen_inclusive")["in_bounds"].status == "refuted"


def test_exit_test_before_a_latch_that_only_branches_back_is_proven():
    res = _prove_ptx(_rotated(ROTATED.format(e=0)))
    assert res["in_bounds"].status == "proven" and res["in_bounds"].scope == "all-dims", res["in_bounds"].reason


@pytest.mark.parametrize("name", sorted(ROTATED_BROKEN))
def test_a_broken_rotated_exit_is_not_proven(name):
    res = _prove_ptx(_rotated(ROTATED_BROKEN[name]))
    assert res["in_bounds"].status != "proven", f"{name}: in_bounds wrongly proven"
