// kreg prover corpus: bug_tc_row_off_by_one
#define BUG_ROW
#include <cuda_bf16.h>
// One warp per block owns the 16 x 16 tile of the output at rows t0 = 16 * blockIdx.y, columns
// n0 = 16 * blockIdx.x: two mma.sync m16n8k16 tiles, fragments by ldmatrix from two shared stages that
// cp.async fills (steps of 16 along K in stage pairs; lane l copies row l / 2, k offset 8 (l % 2) of
// each tile, zero-filled past T, N or K, from row 0 / an offset clamped to K - 8 when outside).
// Flags: BUG_NO_WAIT drops the wait before the second stage of a pair; BUG_ROW lets row T be copied;
// SPLIT: blockIdx.z = 0, 1 takes one half of K (BUG_SPLIT writes both halves' sums to the same Y).

__device__ __forceinline__ void cp16(void* smem, const void* src, bool valid) {
    unsigned d = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void ldm4(unsigned* r, const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

__device__ __forceinline__ void mma16816(float* d, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void stage_copy(__nv_bfloat16 (*xs)[24], __nv_bfloat16 (*ws)[24], const __nv_bfloat16* xr,
                                           const __nv_bfloat16* wr, bool xin, bool win, int k, int kend, int K) {
    int lane = threadIdx.x;
    k += 8 * (lane % 2);
    bool kin = k < kend;
    int kc = min(k, K - 8);
    cp16(&xs[lane / 2][8 * (lane % 2)], xr + kc, kin && xin);
    cp16(&ws[lane / 2][8 * (lane % 2)], wr + kc, kin && win);
    asm volatile("cp.async.commit_group;");
}

__device__ __forceinline__ void stage_mma(float (*acc)[4], __nv_bfloat16 (*xs)[24], __nv_bfloat16 (*ws)[24]) {
    int lane = threadIdx.x;
    unsigned a[4], b[4];
    ldm4(a, &xs[lane & 15][8 * (lane >> 4)]);
    ldm4(b, &ws[(lane & 7) + 8 * (lane >> 4)][8 * ((lane >> 3) & 1)]);
    mma16816(acc[0], a, b[0], b[1]);
    mma16816(acc[1], a, b[2], b[3]);
}

// the sums over k in [kbeg, kend) of this block's tile, in acc (tile j, register c)
__device__ __forceinline__ void tile_sums(float (*acc)[4], const __nv_bfloat16* __restrict__ X,
                                          const __nv_bfloat16* __restrict__ W, int T, int N, int K, int kbeg, int kend) {
    __shared__ __align__(16) __nv_bfloat16 xs[2][16][24], ws[2][16][24];
    int lane = threadIdx.x;
    long long t0 = 16LL * blockIdx.y, n0 = 16LL * blockIdx.x, r = lane / 2;
#ifdef BUG_ROW
    bool xin = t0 + r <= T;
#else
    bool xin = t0 + r < T;
#endif
    bool win = n0 + r < N;
    const __nv_bfloat16* xr = X + (xin ? (t0 + r) * K : 0);
    const __nv_bfloat16* wr = W + (win ? (n0 + r) * K : 0);
    stage_copy(xs[0], ws[0], xr, wr, xin, win, kbeg, kend, K);
#pragma unroll 1
    for (int k0 = kbeg; k0 < kend; k0 += 32) {
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
        stage_copy(xs[1], ws[1], xr, wr, xin, win, k0 + 16, kend, K);
        stage_mma(acc, xs[0], ws[0]);
#ifndef BUG_NO_WAIT
        asm volatile("cp.async.wait_all;" ::: "memory");
#endif
        __syncthreads();
        stage_copy(xs[0], ws[0], xr, wr, xin, win, k0 + 32, kend, K);
        stage_mma(acc, xs[1], ws[1]);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
}

extern "C" __global__ void bug_tc_row_off_by_one(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    float acc[2][4] = {};
    tile_sums(acc, X, W, T, N, K, 0, K);
    int lane = threadIdx.x;
    long long t0 = 16LL * blockIdx.y, n0 = 16LL * blockIdx.x;
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            long long t = t0 + lane / 4 + 8 * (c / 2), n = n0 + 8 * j + 2 * (lane % 4) + c % 2;
            if (t < T && n < N) Y[t * N + n] = __float2bfloat16(acc[j][c]);
        }
}
