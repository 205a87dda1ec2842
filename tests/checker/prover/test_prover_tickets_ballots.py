"""What the prover models for the issue-32 kernels, each against kernels that break it: atomic tickets
(distinct values in a bounded range, only for a counter that nothing but one atomic per thread touches),
full-mask ballot ranks (popc of the warp's mask below the lane), a loop counter widened and narrowed back.
The correct corpus kernels are proven on all four properties; every variation with a bug is not proven on
the property it breaks."""
from __future__ import annotations

import pytest

from kreg.checker.prover.prove import PROPS, prove
from kreg.checker.ptx.compile import compile_cuda

from helpers.prover_corpus import corpus_ops, corpus_prove, corpus_variant

TICKET = 'extern "C" __global__ void ticket_compact(const int* __restrict__ x, unsigned* cnt, int* __restrict__ out, int n) {{\n' \
         '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    {body}\n}}\n'
BALLOT = 'extern "C" __global__ void ballot_scatter(const int* __restrict__ x, int* __restrict__ out, unsigned* __restrict__ cnt, int n) {{\n' \
         '    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;\n    {body}\n}}\n'

BROKEN = {
    # no bound on the threads that take a ticket: up to cdiv(N, 256) * 256 slots
    "ticket_unguarded": (TICKET, "int j = i < n ? i : n - 1;\n    if (x[j] > 0) out[atomicAdd(cnt, 1u)] = x[j];",
                         "in_bounds"),
    # two tickets per thread: 2N slots
    "ticket_twice": (TICKET, "if (i < n && x[i] > 0) { atomicAdd(cnt, 1u); out[atomicAdd(cnt, 1u)] = x[i]; }",
                     "in_bounds"),
    # a step of 2: slots up to 2N - 2
    "ticket_step2": (TICKET, "if (i < n && x[i] > 0) out[atomicAdd(cnt, 2u)] = x[i];", "in_bounds"),
    # the counter also reset by a plain store: tickets repeat
    "ticket_reset": (TICKET, "if (i == 0) *cnt = 0u;\n    if (i < n && x[i] > 0) out[atomicAdd(cnt, 1u)] = x[i];",
                     "race_free"),
    # tickets taken in a loop: 2N slots
    "ticket_loop": (TICKET, "if (i < n) for (int r = 0; r < 2; ++r) out[atomicAdd(cnt, 1u)] = x[i];", "in_bounds"),
    # a ballot of half the warp with the full mask (undefined: the other lanes never vote): no one warp value
    "ballot_half": (BALLOT, "int v = i < n ? x[i] : 0;\n    if (lane < 16) {\n"
                    "        unsigned mask = __ballot_sync(0xffffffffu, v > 0);\n"
                    "        if (v > 0) out[i - lane + __popc(mask & ((1u << lane) - 1u))] = v;\n    }",
                    "race_free"),
    # the rank counts the lane itself: lane 31 one past the warp's slots
    "ballot_inclusive": (BALLOT, "int v = i < n ? x[i] : 0;\n    unsigned mask = __ballot_sync(0xffffffffu, v > 0);\n"
                         "    if (v > 0) out[i - lane + __popc(mask & ((2u << lane) - 1u))] = v;", "in_bounds"),
    # two kept lanes write one rank: the rank of the lane below is used
    "ballot_rank_below": (BALLOT, "int v = i < n ? x[i] : 0;\n    unsigned mask = __ballot_sync(0xffffffffu, v > 0);\n"
                          "    if (v > 0) out[i - lane + __popc(mask & ((1u << lane) - 1u) & ~(1u << (lane - 1)))] = v;",
                          "race_free"),
}


def _prove(template, body, like):
    v = corpus_variant(like)
    src = template.format(body=body)
    ptx = compile_cuda(src, f"{like}.cu", v.options).ptx
    return prove(v, corpus_ops()[v.op], ptx, timeout_ms=4000, budget_ms=12000, isolate=False).verdicts


@pytest.mark.parametrize("name", ["ticket_compact", "ballot_scatter", "shist_shared"])
def test_correct_kernel_is_proven_for_all_dims(name):
    res = corpus_prove(name)
    assert all(res[p].status == "proven" and res[p].scope == "all-dims" for p in PROPS), \
        {p: (res[p].status, res[p].reason) for p in PROPS}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_variation_is_not_proven(name):
    template, body, prop = BROKEN[name]
    like = "ticket_compact" if template is TICKET else "ballot_scatter"
    res = _prove(template, body, like)
    assert res[prop].status != "proven", f"{name}: {prop} wrongly proven"


def test_buggy_siblings_are_refuted():
    assert corpus_prove("bug_ticket_reread")["race_free"].status == "refuted"
    assert corpus_prove("bug_ballot_inclusive")["in_bounds"].status == "refuted"
    assert corpus_prove("bug_shist_no_zero_barrier")["race_free"].status == "refuted"
