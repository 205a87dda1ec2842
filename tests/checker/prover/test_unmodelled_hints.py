"""The reasons an unknown verdict gives for two generator idioms out of the prover's reach (issue 32): a loop the
compiler unrolled after a remainder loop, and a cp.async wait a pipeline loop does not reach every iteration; each
named on the corpus kernel that has it and not on the same kernel rewritten the way the hint advises."""
from __future__ import annotations

import pytest

from helpers.prover_corpus import corpus_ptx, corpus_variant

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.unmodelled import unmodelled

UNROLLED, WAIT = "unrolled after a remainder loop", "does not reach every iteration"
SPLITK_LOOP = "    for (int k = k0 + t; k < k1; k += 128)"


def _wait_every_iteration(n):
    return ('''        if (c > 0) {                                   // consume chunk c - 1
            asm volatile("cp.async.wait_group %d;" ::: "memory");
            __syncthreads();
''' % n, '''        asm volatile("cp.async.wait_group %d;" ::: "memory");
        __syncthreads();
        if (c > 0) {                                   // consume chunk c - 1
''' % n)


def _hints(name, edit=None):
    v = corpus_variant(name)
    if edit is None:
        ptx = corpus_ptx(name)
    else:
        src = v.source_path.read_text()
        assert edit[0] in src
        ptx = compile_cuda(src.replace(*edit), v.source_path.name, v.options).ptx
    return " | ".join(unmodelled(P.parse(ptx), v))


def test_an_unrolled_loop_after_a_remainder_loop_is_named():
    assert UNROLLED in _hints("splitk_slices")
    assert "#pragma unroll 1" in _hints("splitk_slices")
    assert UNROLLED not in _hints("splitk_slices", (SPLITK_LOOP, '    _Pragma("unroll 1")' + SPLITK_LOOP))


@pytest.mark.parametrize("name,n", [("cp_pipe_rows", 1), ("bug_cp_pipe_wait2", 2)])
def test_a_wait_the_loop_skips_is_named(name, n):
    assert WAIT in _hints(name)
    assert WAIT not in _hints(name, _wait_every_iteration(n))
    assert UNROLLED not in _hints(name)


def test_neither_hint_without_loops():
    got = _hints("pdl_scale")
    assert UNROLLED not in got and WAIT not in got
