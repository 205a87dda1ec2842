"""Operand forms the parser, the prover and the emulator read alike (prover-0.19): float literals by their bits,
labels of a { } block, cp.async's optional operands, lop3 with a predicate destination."""
import numpy as np
import pytest

from kreg.checker.emulator import machine as E
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.compile import compile_cuda

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def _kernel(body: str, params: str = ".param .u64 out") -> P.Kernel:
    return P.parse(HEAD + f".visible .entry k({params})\n{{\n{body}\n}}\n").kernel("k")


def test_float_literal_keeps_its_bits_a_signalling_nan_too():
    k = _kernel(".reg .b32 %r<2>;\nmov.b32 %r1, 0f7FA00000;\nmov.b32 %r1, 0f3F800000;\nret;")
    snan, one = (i.args[1] for i in k.instrs[:2])
    assert snan.raw == (0x7FA00000, 32) and one.raw == (0x3F800000, 32) and one.value == 1.0
    assert P.render_operand(snan) == "0f7FA00000"


def test_a_blocks_labels_are_its_own_and_one_declared_twice_is_an_error():
    snippet = "{ .reg .pred p; setp.ne.u32 p, %r1, 0; @p bra SKIP; mov.u32 %r1, 0; SKIP: }"
    k = _kernel(f".reg .b32 %r<2>;\nmov.u32 %r1, 1;\n{snippet}\n{snippet}\nret;")
    bras = [i for i in k.instrs if i.op == "bra"]
    targets = [k.labels[b.args[0].name] for b in bras]
    assert len(set(targets)) == 2 and all(t > b.index for t, b in zip(targets, bras))
    assert targets[0] < bras[1].index          # the first copy's branch stays in the first copy
    with pytest.raises(P.ParseError, match="twice"):
        _kernel(".reg .b32 %r<2>;\nL1:\nmov.u32 %r1, 1;\nL1:\nret;")


@pytest.mark.parametrize("text,operands", [
    ("cp.async.ca.shared.global [%r1], [%rd1], 4;", 0),
    ("cp.async.ca.shared.global [%r1], [%rd1], 4, %r2;", 1),             # src-size
    ("cp.async.ca.shared.global [%r1], [%rd1], 4, %p1;", 1),             # ignore-src
    ("cp.async.cg.shared.global.L2::cache_hint [%r1], [%rd1], 16, %rd2;", 0),     # a cache policy alone
    ("cp.async.cg.shared.global.L2::cache_hint [%r1], [%rd1], 16, %r2, %rd2;", 1),
])
def test_cp_async_operands_after_cp_size_leave_out_the_cache_policy(text, operands):
    k = _kernel(f".reg .b32 %r<3>;\n.reg .b64 %rd<3>;\n.reg .pred %p<2>;\n{text}\nret;")
    assert len(P.cp_async_operands(k.instrs[0])) == operands


def test_shared_cta_is_the_shared_state_space():
    k = _kernel(".reg .b32 %r<2>;\n.reg .f32 %f<2>;\nst.shared::cta.f32 [%r1], %f1;\nret;")
    assert k.instrs[0].space == "shared"


IGNORE_SRC = r'''
extern "C" __global__ void k(const float* a, float* out, int n) {
    __shared__ float s[64];
    int i = threadIdx.x;
    unsigned sa = (unsigned)__cvta_generic_to_shared(&s[i]);
    asm volatile("{ .reg .pred p; setp.ge.s32 p, %2, %3; cp.async.ca.shared.global [%0], [%1], 4, p; }"
                 :: "r"(sa), "l"(a + i), "r"(i), "r"(n) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    unsigned d, p;
    asm volatile("{ .reg .pred q, r; setp.ne.u32 q, %2, %2; lop3.or.b32 %0|r, %2, %2, %2, 0xF0, q; selp.u32 %1, 1, 0, r; }"
                 : "=r"(d), "=r"(p) : "r"((unsigned)i));
    out[i] = s[i] + (d == (unsigned)i ? 0.0f : 100.0f) + (p == (i != 0) ? 0.0f : 1000.0f);
}
'''


def test_emulator_cp_async_ignore_src_zero_fills_without_reading_and_lop3_sets_its_predicate():
    n = 40
    mem = E.Memory()
    a = mem.alloc(n * 4, "a")           # only n floats: a read past them is out of bounds
    mem.write(a, np.arange(1, n + 1, dtype=np.float32).tobytes())
    out = mem.alloc(64 * 4, "out")
    E.launch(compile_cuda(IGNORE_SRC).ptx, "k", 1, 64, 0, [np.uint64(a), np.uint64(out), np.int32(n)], mem)
    got = np.frombuffer(mem.read(out, 64 * 4), np.float32)
    want = np.concatenate([np.arange(1, n + 1), np.zeros(64 - n)]).astype(np.float32)
    assert np.array_equal(got, want)
