"""Alignment is part of in_bounds: every access at a multiple of its width (a float4 access of 16 bytes at a
multiple of 16), for all dims, given 256-byte aligned buffers. The corpus's float4 row kernel is refuted with a
concrete witness where the op allows D % 4 != 0 and proven where it requires D % 4 == 0; the emulator faults
on the misaligned access as the GPU does, so the witness replays."""
from __future__ import annotations


import numpy as np
import pytest

from kreg.checker.emulator import machine as E
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.bind import bind
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.prove import PROPS

from helpers.prover_corpus import corpus_ops, corpus_prove, corpus_ptx, corpus_variant


def test_float4_rows_without_the_requirement_are_refuted_with_a_witness():
    v = corpus_prove("bug_row_scale_f4_misaligned")["in_bounds"]
    assert v.status == "refuted" and "misaligned" in v.reason
    w = v.witness
    assert w["dims"]["D"] % 4 != 0                       # the witness is a shape the op allows but float4 can't take
    acc = w["addresses"][0]
    assert acc["bytes"] == 16 and acc["offset"] % 16 != 0
    assert "v4" in w["instrs"][0]["text"]
    assert v.replay == "confirmed"                       # the emulator faults on it


def test_float4_rows_with_the_requirement_are_proven():
    res = corpus_prove("row_scale_f4")
    for p in PROPS:
        assert res[p].status == "proven" and res[p].scope == "all-dims", (p, res[p].reason)


def _run_rows(name, M, D):
    v = corpus_variant(name)
    op = corpus_ops()[v.op]
    module = P.parse(corpus_ptx(name))
    mem = E.Memory()
    x = mem.alloc(4 * M * D, "x")
    out = mem.alloc(4 * M * D, "out")
    mem.write(x, np.arange(M * D, dtype=np.float32).tobytes())
    (b,) = bind(v, op, module, {"M": M, "D": D}, {"x": x, "out": out}, {"alpha": 2.0})
    E.launch(module, b.entry, b.grid, b.block, b.shared, b.args, mem)
    return x, np.frombuffer(mem.read(out, 4 * M * D), np.float32)


def test_emulator_faults_on_a_misaligned_float4_load():
    with pytest.raises(E.EmulatorError) as e:
        _run_rows("bug_row_scale_f4_misaligned", 2, 6)
    err = e.value
    assert err.kind == "misaligned" and err.instr.op == "ld" and err.instr.vector == 4
    assert err.block == (1, 0, 0) and err.buffer == "x"        # row 1 starts at byte 24


def test_emulator_runs_the_same_kernel_on_aligned_rows():
    _, y = _run_rows("bug_row_scale_f4_misaligned", 3, 8)
    assert np.array_equal(y, 2 * np.arange(24, dtype=np.float32))


def test_emulator_faults_on_a_misaligned_vector_store():
    src = r'''extern "C" __global__ void k(float* out, int off) {
        reinterpret_cast<float2*>(out + off)[threadIdx.x] = make_float2(1.f, 2.f);
    }'''
    ptx = compile_cuda(src).ptx
    mem = E.Memory()
    out = mem.alloc(1024, "out")
    E.launch(ptx, "k", 1, 32, 0, [np.uint64(out), np.int32(2)], mem)      # 8-byte stores at multiples of 8
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx, "k", 1, 32, 0, [np.uint64(out), np.int32(1)], mem)
    assert e.value.kind == "misaligned" and e.value.instr.op == "st" and e.value.address == out + 4
