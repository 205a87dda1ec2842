"""The prover's wgmma operand footprint (checker/semantics._footprint) against the emulator's addressing
(checker/emu_wgmma._operand_addresses, whose K-major and MN-major 128-byte-swizzle layouts were checked
against the H100): over many descriptors (start offsets aligned and not, LBO, SBO, N in 8 .. 256, both
operand majors) every byte the emulator reads lies in one of the prover's ranges (soundness), and the
ranges are not vacuous (each holds a byte read, none much wider than what is read in it); with a
symbolic start the ranges hold the emulator's bytes at every start tried; the operand forms the prover
accepts (SS and RS, imm-trans 0 / 1) and refuses."""
import numpy as np
import pytest
import z3

from kreg.checker.emulator import machine as emulator  # noqa: F401  (loads the emulator's handlers in order)
from kreg.checker.emulator import wgmma as emu_wgmma
from kreg.checker.ptx import parse as P
from kreg.checker.prover import semantics as S
from kreg.checker.prover.state import Unsupported


class _Env:
    def __init__(self, constraints=()):
        self.constraints = list(constraints)

    def thread_constraints(self, t):
        return []

    def text_of(self, t):
        return None          # no name for the constraints' text: a quick check keys them by their terms


class _Ex:
    """What _footprint needs of the symbolic executor: the launch's constraints (for _always)."""

    def __init__(self, constraints=()):
        self.env, self.t = _Env(constraints), "A"


class _Emu:
    def err(self, kind, msg):
        return RuntimeError(f"{kind}: {msg}")


def desc_of(start, lbo, sbo, mode=1, base=0):
    return (start >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (base << 49) | (mode << 62)


def emulator_bytes(desc, rows, mn_major):
    a = emu_wgmma._operand_addresses(_Emu(), desc, rows, mn_major).reshape(-1)
    return np.unique(np.concatenate([a, a + 1]))          # 2-byte elements


def ranges(desc, rows, mn_major, ex=None):
    d = desc if isinstance(desc, z3.ExprRef) else z3.BitVecVal(desc, 64)
    return S._footprint(ex or _Ex(), d, rows, _Ins(), mn_major)


class _Ins:
    text = "wgmma.mma_async (test)"


def concrete(rs, subst=()):
    out = []
    for lo, w in rs:
        v = z3.simplify(z3.substitute(lo, *subst) if subst else lo)
        out.append((v.as_long(), w))
    return out


def inside(byts, rs):
    ok = np.zeros(byts.size, bool)
    for lo, w in rs:
        ok |= (byts >= lo) & (byts < lo + w)
    return ok


def cases(n_cases=400, seed=13):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_cases):
        mn = bool(i % 2)
        rows = int(rng.integers(1, 33)) * 8
        if rng.random() < 0.5:
            start = int(rng.integers(0, 64)) * 1024                          # tiles as kernels align them
        else:
            start = int(rng.integers(0, 2 ** 14)) << 4                       # any 16-byte start
        lbo = int(rng.choice([0, 16, 128, 1024, 8192, 16384, int(rng.integers(0, 2 ** 14)) << 4]))
        sbo = int(rng.choice([16, 128, 1024, 2048, int(rng.integers(1, 2 ** 14)) << 4]))
        out.append((start, lbo, sbo, rows, mn))
    return out


@pytest.mark.parametrize("start,lbo,sbo,rows,mn", cases())
def test_footprint_holds_every_byte_the_emulator_reads(start, lbo, sbo, rows, mn):
    desc = desc_of(start, lbo, sbo)
    byts = emulator_bytes(desc, rows, mn)
    rs = concrete(ranges(desc, rows, mn))
    assert inside(byts, rs).all(), (hex(desc), rows, mn, rs)
    for lo, w in rs:                  # not vacuous: each range holds a read, and is within a row or two of them
        got = byts[(byts >= lo) & (byts < lo + w)]
        assert got.size
        assert got.min() - lo < 128 and lo + w - got.max() <= 256


@pytest.mark.parametrize("rows", [8, 64, 72, 128, 256])
@pytest.mark.parametrize("mn", [False, True])
def test_the_kernels_descriptors_are_tight(rows, mn):
    """Aligned tiles (start 1024-aligned, SBO 1024, LBO = the distance of 64-row halves): each range is
    exactly the 128-byte rows the emulator touches, every byte of them read where rows fill them."""
    lbo = rows * 128 if mn else 16
    desc = desc_of(3 * 1024, lbo, 1024)
    byts = emulator_bytes(desc, rows, mn)
    rs = concrete(ranges(desc, rows, mn))
    assert inside(byts, rs).all()
    rows_read = set((byts // 128).tolist())
    rows_in = {r for lo, w in rs for r in range(lo // 128, (lo + w) // 128)}
    assert rows_in == rows_read


@pytest.mark.parametrize("mn", [False, True])
@pytest.mark.parametrize("rows", [8, 56, 64, 128, 200])
def test_symbolic_start_holds_the_bytes_at_every_start(mn, rows):
    x = z3.BitVec("start16", 14)                       # start >> 4, unknown
    lbo, sbo = 9 * 1024 + 48, 1040
    desc = z3.Concat(z3.BitVecVal(desc_of(0, lbo, sbo) >> 14, 50), x)
    rs = ranges(desc, rows, mn)
    for s16 in [0, 1, 7, 8, 9, 63, 64, 100, 1000, 2 ** 13 - 5]:
        byts = emulator_bytes(desc_of(s16 << 4, lbo, sbo), rows, mn)
        assert inside(byts, concrete(rs, [(x, z3.BitVecVal(s16, 14))])).all(), s16


@pytest.mark.parametrize("mn", [False, True])
def test_start_proven_aligned_by_the_constraints_gives_the_tight_ranges(mn):
    y = z3.BitVec("row", 11)
    x = z3.Concat(y, z3.BitVecVal(0, 3))               # start >> 4 = 8 y: start = 128 y
    lbo = 128 * 128
    desc = z3.Concat(z3.BitVecVal(desc_of(0, lbo, 1024) >> 14, 50), x)
    loose = ranges(z3.Concat(z3.BitVecVal(desc_of(0, lbo, 1024) >> 14, 50), z3.BitVec("any", 14)), 128, mn)
    tight = ranges(desc, 128, mn)
    assert sum(w for _, w in tight) + 128 * len(tight) == sum(w for _, w in loose)
    for r in [0, 1, 5, 127]:
        byts = emulator_bytes(desc_of(r * 128, lbo, 1024), 128, mn)
        assert inside(byts, concrete(tight, [(y, z3.BitVecVal(r, 11))])).all()


@pytest.mark.parametrize("mode,base", [(0, 0), (2, 0), (1, 1)])
def test_other_layouts_are_unsupported(mode, base):
    with pytest.raises(Unsupported):
        ranges(desc_of(1024, 16, 1024, mode, base), 64, True)


def _mma(text):
    return P.parse_instruction(text)


class _K:
    def __init__(self, regs):
        self.regs = regs


class _ExOps:
    def __init__(self):
        regs = {f"%f{i}": "f32" for i in range(128)}
        regs.update({f"%r{i}": "b32" for i in range(8)})
        regs.update({"%rd1": "b64", "%rd2": "b64", "%r9": "b32", "%p1": "pred"})
        self.k = _K(regs)


def _d(n):
    return "{" + ",".join(f"%f{i}" for i in range(n // 2)) + "}"


@pytest.mark.parametrize("text,want", [
    (f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, %rd1, %rd2, %p1, 1, 1, 0, 0;",
     [(64, False), (128, False)]),
    (f"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {_d(64)}, %rd1, %rd2, %p1, 1, 1, 1, 1;",
     [(64, True), (64, True)]),
    (f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, {{%r0,%r1,%r2,%r3}}, %rd2, %p1, 1, 1, 1;",
     [(128, True)]),
    (f"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {_d(8)}, {{%r0,%r1,%r2,%r3}}, %rd2, %p1, 1, -1, 0;",
     [(8, False)]),
])
def test_operand_forms(text, want):
    ins = _mma(text)
    n = int(next(m for m in ins.mods if m.startswith("m64n"))[4:-3])
    got = S._wgmma_operands(_ExOps(), ins, n)
    assert [(rows, mn) for _, rows, mn in got] == want
    assert [r.name for r, _, _ in got] == (["%rd2"] if len(want) == 1 else ["%rd1", "%rd2"])


@pytest.mark.parametrize("text", [
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, {{%r0,%r1,%r2}}, %rd2, %p1, 1, 1, 1;",
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, {{%r0,%r1,%r2,%r3}}, %rd2, %p1, 1, 1, 2;",
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, {{%r0,%r1,%r2,%r3}}, %rd2, %p1, 1, 1, %r9;",
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, {{%r0,%r1,%r2,%r3}}, %rd2, %p1, 1, 1;",
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, {{%r0,%r1,%r2,%r3}}, %r9, %p1, 1, 1, 1;",
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, %rd1, %rd2, %p1, 1, 1, 0;",
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(64)}, %rd1, %rd2, %p1, 1, 1, 0, 0;",
    f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {_d(128)}, %rd1, %rd2, %p1, 1, 1, 0, 1, 0;",
])
def test_other_operand_forms_are_unsupported(text):
    ins = _mma(text)
    with pytest.raises(Unsupported):
        S._wgmma_operands(_ExOps(), ins, 128)
