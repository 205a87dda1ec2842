// Safe GEMV (entries gemv_bf16, gemv_f16): y[n] = sum_k W[n, k] x[k] with fp32 products and sums.
// A block of GROUPS * SLICES warps owns the BLOCK_ROWS = GROUPS * ROWS rows n = BLOCK_ROWS * blockIdx.x
// + r of y (the knobs below; by default 8 warps, 4 rows). Warp w works on row group g = w / SLICES and
// K slice s = w % SLICES: for the ROWS rows of its group it reads the 16-byte vectors k = s * 256 +
// lane * 8 + i * SLICES * 256 (the slices together cover K, coalesced across the warps), sums its lanes
// with shuffles and its lane 0 writes the partial sum to red[row][s] in shared memory; after the
// barrier (reached by every thread) thread r < BLOCK_ROWS adds the partials of row r in a fixed order
// and writes y[n]: identical bits on every launch. W and x are only read. It opts in to PDL: nothing
// but register arithmetic (and, with GEMV_PREFETCH, L2 prefetches of W) before its wait.
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef GEMV_SLICES                // compile-time knobs (bench/gemv_sweep.py tries others; the grid and
#define GEMV_SLICES 4              // block of the YAML must match: grid cdiv(N, GROUPS * ROWS), block
#endif                             // 32 * GROUPS * SLICES)
#ifndef GEMV_ROWS
#define GEMV_ROWS 2
#endif
#ifndef GEMV_GROUPS
#define GEMV_GROUPS 2
#endif
#ifndef GEMV_PREFETCH              // 128-byte lines of the block's rows of W each thread asks the L2 for
#define GEMV_PREFETCH 0            // before the PDL wait (W is read-only here; kreg_pdl.cuh), in the
#endif                             // blocks below GEMV_PREFETCH_BLOCKS (the first wave: those a PDL
#ifndef GEMV_PREFETCH_BLOCKS       // launch starts early); the others ask for one line only
#define GEMV_PREFETCH_BLOCKS 0x7fffffff
#endif
constexpr int SLICES = GEMV_SLICES;              // warps splitting K for one row group
constexpr int ROWS = GEMV_ROWS;                  // rows per warp
constexpr int BLOCK_ROWS = GEMV_GROUPS * ROWS;   // 8 warps = 2 row pairs x 4 slices

template <class T>
__device__ __forceinline__ void gemv_own(const T* __restrict__ W, const T* __restrict__ x, T* __restrict__ y,
                                         int N, int K) {
    __shared__ float red[BLOCK_ROWS][SLICES];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int g = warp / SLICES, s = warp % SLICES;
    long long n0 = (long long)blockIdx.x * BLOCK_ROWS + g * ROWS;
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) acc[r] = 0.f;
#if defined(GEMV_UNROLL) && GEMV_UNROLL > 1
#pragma unroll GEMV_UNROLL
#endif
    for (int k = s * 256 + lane * 8; k < K; k += SLICES * 256) {
        kreg::F8 xv = kreg::load8<T>(x + k);
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            if (n0 + r < N) {
                kreg::F8 wv = kreg::load8<T>(W + (n0 + r) * K + k);
#pragma unroll
                for (int j = 0; j < 8; j++) acc[r] = fmaf(wv.v[j], xv.v[j], acc[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
        if (lane == 0) red[g * ROWS + r][s] = acc[r];
    }
    __syncthreads();
    long long n = (long long)blockIdx.x * BLOCK_ROWS + threadIdx.x;
    if (threadIdx.x < BLOCK_ROWS && n < N) {
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < SLICES; i++) sum += red[threadIdx.x][i];
        y[n] = kreg::Cvt<T>::from(sum);
    }
}

// Before the wait (a PDL launch may start while the previous kernel runs): the L2 fetches this block's
// rows of W, [n0 * K, min(N, n0 + BLOCK_ROWS) * K) elements, 64 (one line) per thread and step, each
// address clamped to the tile's last element, so every prefetch lies inside W.
template <class T>
__device__ __forceinline__ void gemv_prefetch(const T* W, int N, int K) {
#if GEMV_PREFETCH > 0
    long long lo = (long long)blockIdx.x * BLOCK_ROWS * K;
    long long hi = min((long long)N, (long long)(blockIdx.x + 1) * BLOCK_ROWS) * K - 1;
    long long step = blockIdx.x < GEMV_PREFETCH_BLOCKS ? 64 : 0;
#pragma unroll
    for (int i = 0; i < GEMV_PREFETCH; i++)
        kreg::prefetch_l2(W + min(lo + ((long long)i * blockDim.x + threadIdx.x) * step, hi));
#endif
}

extern "C" __global__ void gemv_bf16(const __nv_bfloat16* __restrict__ W, const __nv_bfloat16* __restrict__ x,
                                     __nv_bfloat16* __restrict__ y, int N, int K) {
    gemv_prefetch(W, N, K);
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_own(W, x, y, N, K);
}

extern "C" __global__ void gemv_f16(const __half* __restrict__ W, const __half* __restrict__ x,
                                    __half* __restrict__ y, int N, int K) {
    gemv_prefetch(W, N, K);
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_own(W, x, y, N, K);
}
