"""What the prover models for counted loops the compiler unrolls (a loop bound from a device scalar, or a dim):
an iteration is reached only if no earlier one hit the exit test `counter != E`, a fact the integer translation
keeps (an unsigned remainder of the distance), also where the test ends the block before a latch that only
branches back (a rotated remainder loop). The correct corpus kernel is proven on all four properties; every
variation whose loop can run past its buffer is not proven in bounds."""
from __future__ import annotations

import pytest

from kreg.checker.prover.prove import PROPS, prove
from kreg.checker.ptx.compile import compile_cuda

from helpers.prover_corpus import corpus_ops, corpus_prove, corpus_variant

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


def _prove(body):
    v = corpus_variant("devlen_sum")
    ptx = compile_cuda(DEVLEN.format(body=body), "devlen_sum.cu", v.options).ptx
    return prove(v, corpus_ops()[v.op], ptx, timeout_ms=4000, budget_ms=12000, isolate=False).verdicts


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
