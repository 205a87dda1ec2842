"""The emulator's tensor-core and async-copy instructions against the PTX ISA's fragment layouts, written
out here independently of checker/emulator/tensor.py: mma.sync m16n8k16 (bf16, f16) on fragments each lane
loads by the ISA's formulas (groupID = lane / 4, threadID_in_group = lane % 4), ldmatrix x1/x2/x4 with
and without .trans on rows at lane-supplied addresses, and cp.async landing only at its wait."""
import numpy as np
import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.emulator.machine import Memory, launch
from kreg.checker.emulator.machine import EmulatorError
from kreg.conformance.dtypes import encode
from kreg.runtime import parsed

MMA_SRC = r"""
#include <cuda_bf16.h>
extern "C" __global__ void k(const unsigned* a, const unsigned* b, const float* c, float* d) {
    int l = threadIdx.x;
    float r[4] = {c[4 * l], c[4 * l + 1], c[4 * l + 2], c[4 * l + 3]};
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.%8.%8.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%9,%10}, {%0,%1,%2,%3};"
                 : "+f"(r[0]), "+f"(r[1]), "+f"(r[2]), "+f"(r[3])
                 : "r"(a[4 * l]), "r"(a[4 * l + 1]), "r"(a[4 * l + 2]), "r"(a[4 * l + 3]), "n"(0),
                   "r"(b[2 * l]), "r"(b[2 * l + 1]));
    for (int i = 0; i < 4; i++) d[4 * l + i] = r[i];
}
"""


def _mma_src(fmt):
    return MMA_SRC.replace("%8.%8", f"{fmt}.{fmt}").replace(', "n"(0)', "").replace("%9,%10", "%8,%9")


def _pack(lo, hi):
    return lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_mma_m16n8k16_follows_the_isa_fragment_layout(fmt):
    rng = np.random.default_rng(3)
    A, B = rng.integers(-8, 8, (16, 16)) / 4.0, rng.integers(-8, 8, (16, 8)) / 4.0   # exact in 16 bits
    C = rng.integers(-8, 8, (16, 8)) / 2.0
    a_bits, b_bits = encode(A, fmt).astype(np.uint16), encode(B, fmt).astype(np.uint16)
    afr, bfr, cfr = np.zeros((32, 4), np.uint32), np.zeros((32, 2), np.uint32), np.zeros((32, 4), np.float32)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(4):          # a0..a7 in pairs: rows g, g+8, g, g+8; columns 2t(+1), then + 8
            row, col = g + 8 * (i % 2), 2 * t + 8 * (i // 2)
            afr[lane, i] = _pack(a_bits[row, col], a_bits[row, col + 1])
        for i in range(2):          # b0..b3: rows (k) 2t(+1), + 8; column (n) g
            bfr[lane, i] = _pack(b_bits[2 * t + 8 * i, g], b_bits[2 * t + 8 * i + 1, g])
        for i in range(4):          # c0..c3: row g (c0, c1) or g + 8, column 2t + (i & 1)
            cfr[lane, i] = C[g + 8 * (i // 2), 2 * t + i % 2]
    module = parsed(compile_cuda(_mma_src(fmt), "mma.cu", []).ptx)
    mem = Memory()
    pa, pb, pc, pd = (mem.alloc(x.nbytes) for x in (afr, bfr, cfr, cfr))
    for p, x in ((pa, afr), (pb, bfr), (pc, cfr)):
        mem.write(p, x)
    launch(module, "k", 1, 32, 0, [np.uint64(pa), np.uint64(pb), np.uint64(pc), np.uint64(pd)], mem)
    dfr = np.frombuffer(mem.read(pd, cfr.nbytes), np.float32).reshape(32, 4)
    D = A @ B + C
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i in range(4):
            assert dfr[lane, i] == D[g + 8 * (i // 2), 2 * t + i % 2]


LDM_SRC = r"""
extern "C" __global__ void k(const unsigned short* m, const int* rows, unsigned* out) {
    __shared__ __align__(16) unsigned short s[64 * 8];
    int l = threadIdx.x;
    for (int i = l; i < 64 * 8; i += 32) s[i] = m[i];
    __syncthreads();
    unsigned a = (unsigned)__cvta_generic_to_shared(&s[8 * rows[l]]);
    unsigned r[4] = {0, 0, 0, 0};
    asm volatile("ldmatrix.sync.aligned.m8n8.XN.TRshared.b16 REGS, [ADDR];" OUTS : "r"(a));
    for (int i = 0; i < 4; i++) out[4 * l + i] = r[i];
}
"""


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_follows_the_isa_layout(num, trans):
    regs = ",".join(f"%{i}" for i in range(num))
    outs = ": " + ", ".join(f'"=r"(r[{i}])' for i in range(num))
    src = (LDM_SRC.replace("XN", f"x{num}").replace("TR", "trans." if trans else "")
           .replace("REGS", "{" + regs + "}").replace("ADDR", f"%{num}").replace("OUTS", outs))
    rng = np.random.default_rng(num + 10 * trans)
    mat = rng.integers(0, 1 << 16, (64, 8)).astype(np.uint16)       # 64 candidate rows of 8 elements
    rows = rng.permutation(64)[:32].astype(np.int32)                 # lane l supplies row rows[l]
    module = parsed(compile_cuda(src, "ldm.cu", []).ptx)
    mem = Memory()
    pm, pr, po = mem.alloc(mat.nbytes), mem.alloc(rows.nbytes), mem.alloc(32 * 16)
    mem.write(pm, mat)
    mem.write(pr, rows)
    launch(module, "k", 1, 32, 0, [np.uint64(pm), np.uint64(pr), np.uint64(po)], mem)
    got = np.frombuffer(mem.read(po, 32 * 16), np.uint32).reshape(32, 4)
    for lane in range(32):
        for i in range(num):
            m = mat[rows[8 * i:8 * i + 8]]                   # matrix i: rows from lanes 8i .. 8i + 7
            r, c = lane // 4, 2 * (lane % 4)
            lo, hi = (m[c, r], m[c + 1, r]) if trans else (m[r, c], m[r, c + 1])
            assert got[lane, i] == int(lo) | (int(hi) << 16), (lane, i)


CP_SRC = r"""
extern "C" __global__ void k(const int* src, int* out) {
    __shared__ __align__(16) int s[32 * 4];
    int l = threadIdx.x;
    for (int i = 0; i < 4; i++) s[4 * l + i] = -1;
    __syncwarp();
    unsigned d = (unsigned)__cvta_generic_to_shared(&s[4 * l]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src + 4 * l), "r"(l % 2 ? 8 : 16));
    asm volatile("cp.async.commit_group;");
    out[l] = s[4 * l];                                   // before the wait: the copy has not landed here
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    for (int i = 0; i < 4; i++) out[32 + 4 * l + i] = s[4 * l + i];
}
"""


def test_cp_async_lands_at_its_wait_with_zero_fill():
    src = np.arange(1, 129, dtype=np.int32)
    module = parsed(compile_cuda(CP_SRC, "cp.cu", []).ptx)
    mem = Memory()
    ps, po = mem.alloc(src.nbytes), mem.alloc(160 * 4)
    mem.write(ps, src)
    launch(module, "k", 1, 32, 0, [np.uint64(ps), np.uint64(po)], mem)
    out = np.frombuffer(mem.read(po, 160 * 4), np.int32)
    assert (out[:32] == -1).all()
    after = out[32:].reshape(32, 4)
    for l in range(32):
        want = src[4 * l:4 * l + 4].copy()
        if l % 2:
            want[2:] = 0                                  # src-size 8 of 16: the rest zero-filled
        assert (after[l] == want).all()


def test_mma_needs_the_whole_warp():
    module = parsed(compile_cuda(_mma_src("bf16"), "mma.cu", []).ptx)
    mem = Memory()
    p = [mem.alloc(1024) for _ in range(4)]
    with pytest.raises(EmulatorError, match="32"):
        launch(module, "k", 1, 16, 0, [np.uint64(x) for x in p], mem)
