// kreg_gemv.cuh: the body shared by the safe batch-1 linear kernels (gemv, gemv_swiglu, rms_norm_gemv,
// gemv_residual, rms_norm_gemv_swiglu). A block of GROUPS * SLICES warps; warp w works on row group
// g = w / SLICES and K slice s = w % SLICES: for each of its rows it reads the 16-byte vectors
// k = s * 256 + lane * 8 + i * SLICES * 256 (the slices together cover K, coalesced across the warps),
// sums its lanes with shuffles, and lane 0 writes the partial to red[row][s] in shared memory; after the
// caller's barrier (reached by every thread) one thread per row adds the partials in a fixed order:
// identical bits on every launch. W and the vector operand are only read. The knobs (bench/gemv_sweep.py
// tries others; the grid and block of a variant's YAML must match: grid cdiv(rows, GROUPS * ROWS),
// block 32 * GROUPS * SLICES):
#pragma once
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"
#include "kreg_stream.cuh"

#ifndef GEMV_SLICES
#define GEMV_SLICES 4              // warps splitting K for one row group
#endif
#ifndef GEMV_ROWS
#define GEMV_ROWS 2                // rows per warp
#endif
#ifndef GEMV_GROUPS
#define GEMV_GROUPS 2              // row groups per block
#endif
#ifndef GEMV_PREFETCH              // 128-byte lines of the block's rows of W each thread asks the L2 for
#define GEMV_PREFETCH 0            // before the PDL wait (W is read-only here; kreg_pdl.cuh), in the
#endif                             // blocks below GEMV_PREFETCH_BLOCKS (the first wave: those a PDL
#ifndef GEMV_PREFETCH_BLOCKS       // launch starts early); the others ask for one line only
#define GEMV_PREFETCH_BLOCKS 0x7fffffff
#endif
#ifndef GEMV_W_L1                  // 1: W's loads allocate in the L1 as plain loads do; 0 (default): they do
#define GEMV_W_L1 0                // not (ld.global.nc.L1::no_allocate: W is streamed once; the H100's 4B layer
#endif                             // 88.4% -> 91.9% of copy, bench/results/gemv_vs_cublas.txt)
#ifdef GEMV_MIN_BLOCKS              // blocks per SM that the registers must leave room for: the entries'
#define KREG_GEMV_BOUNDS __launch_bounds__(32 * GEMV_GROUPS * GEMV_SLICES, GEMV_MIN_BLOCKS)
#else                              // __launch_bounds__ (none by default)
#define KREG_GEMV_BOUNDS
#endif
constexpr int SLICES = GEMV_SLICES;
constexpr int ROWS = GEMV_ROWS;
constexpr int BLOCK_ROWS = GEMV_GROUPS * ROWS;   // 8 warps = 2 row pairs x 4 slices

namespace kreg {

// Eight elements of W (16 bytes at p): streamed past the L1 (kreg_stream.cuh) unless GEMV_W_L1.
template <class T> __device__ __forceinline__ F8 load8_w(const T* __restrict__ p) {
    return GEMV_W_L1 ? load8<T>(p) : load8_stream<T>(p);
}

// The R dot products of a warp (lane, K slice s of SL): acc[r] = sum_k W[row(r) * K + k] * vec(k)[k]
// for the rows with ok(r) (0 for the others); vec(k) gives the 8 values of the vector operand at
// k..k+7 (it may keep sums of its own, e.g. of x^2). Each lane holds its own part.
template <int R, int SL, class T, class Ok, class Row, class Vec>
__device__ __forceinline__ void gemv_dots(const T* __restrict__ W, int K, int lane, int s, Ok ok, Row row, Vec vec,
                                          float (&acc)[R]) {
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.f;
#if defined(GEMV_UNROLL) && GEMV_UNROLL > 1
#pragma unroll GEMV_UNROLL
#endif
    for (int k = s * 256 + lane * 8; k < K; k += SL * 256) {
        F8 xv = vec(k);
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (ok(r)) {
                F8 wv = load8_w<T>(W + row(r) * K + k);
#pragma unroll
                for (int j = 0; j < 8; j++) acc[r] = fmaf(wv.v[j], xv.v[j], acc[r]);
            }
        }
    }
}

// Lane-sum each acc[r] and let lane 0 write it to red[r][0] (red: this warp's rows, row stride SLICES,
// already offset to the warp's slice column).
template <int R>
__device__ __forceinline__ void gemv_partials_to(float (&acc)[R], int lane, float* red) {
#pragma unroll
    for (int r = 0; r < R; r++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
        if (lane == 0) red[r * SLICES] = acc[r];
    }
}

// A block's pass over its rows: warp w (row group g = w / SLICES, K slice s = w % SLICES) computes R dot
// products, those of rows row(n0, r), r < R, with ok(n0, r), n0 = b0 + g * PER (the group's first
// output); lane 0 writes each to red[g * R + r][s]. The caller's barrier follows, then one thread per row
// adds its red row.
template <int R, int PER, class T, class Ok, class Row, class Vec>
__device__ __forceinline__ void gemv_block(const T* __restrict__ W, int K, float (*red)[SLICES], long long b0, Ok ok,
                                           Row row, Vec vec) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int g = warp / SLICES, s = warp % SLICES;
    long long n0 = b0 + g * PER;
    float acc[R];
    gemv_dots<R, SLICES>(W, K, lane, s, [&](int r) { return ok(n0, r); }, [&](int r) { return row(n0, r); }, vec, acc);
    gemv_partials_to(acc, lane, &red[g * R][s]);
}

// A warp's lane-sum of v (every lane gets it).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Row r's partials in the fixed slice order (after the barrier).
__device__ __forceinline__ float gemv_row_sum(const float* red_row) {
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < SLICES; i++) sum += red_row[i];
    return sum;
}

// A kernel shaped as a gemv (a row of W per output): the block pass over rows n = b0 + t, t < BLOCK_ROWS
// (b0 = BLOCK_ROWS * blockIdx.x), then pre() (every thread), the barrier (reached by every thread), and
// epi(n, the row's sum in the fixed slice order) by thread t for n < N.
template <class T, class Vec, class Pre, class Epi>
__device__ __forceinline__ void gemv_rows(const T* __restrict__ W, int N, int K, Vec vec, Pre pre, Epi epi) {
    __shared__ float red[BLOCK_ROWS][SLICES];
    long long b0 = (long long)blockIdx.x * BLOCK_ROWS;
    gemv_block<ROWS, ROWS>(W, K, red, b0, [&](long long n0, int r) { return n0 + r < N; },
                           [&](long long n0, int r) { return n0 + r; }, vec);
    pre();
    __syncthreads();
    long long n = b0 + threadIdx.x;
    if (threadIdx.x < BLOCK_ROWS && n < N) epi(n, gemv_row_sum(red[threadIdx.x]));
}

// A warp alone over the whole K (the unsafe warp-per-row kernels): acc[r] of the rows with ok(r),
// lane-summed in a fixed order (every lane holds the sums).
template <int R, class T, class Ok, class Row, class Vec>
__device__ __forceinline__ void gemv_warp(const T* W, int K, Ok ok, Row row, Vec vec, float (&acc)[R]) {
    gemv_dots<R, 1>(W, K, threadIdx.x & 31, 0, ok, row, vec, acc);
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = warp_sum(acc[r]);
}

// The RMSNorm's operand at k..k+7: x * w (exact in fp32), with x^2 added to ss.
template <class T>
__device__ __forceinline__ F8 normed8(const T* __restrict__ x, const T* __restrict__ w, int k, float& ss) {
    F8 v = load8<T>(x + k), nw = load8<T>(w + k);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        ss = fmaf(v.v[j], v.v[j], ss);
        v.v[j] *= nw.v[j];
    }
    return v;
}

// The sums of x^2 over K of the warps of row group 0 (whose slices cover K) to sq[slice]: called by
// every thread with its own part ss, before the caller's barrier.
__device__ __forceinline__ void norm_partials_to(float ss, float* sq) {
    ss = warp_sum(ss);
    if (threadIdx.x < 32 * SLICES && (threadIdx.x & 31) == 0) sq[threadIdx.x >> 5] = ss;
}

// 1 / sqrt(mean(x^2) + eps) from the slices' sums (after the barrier; a fixed order).
__device__ __forceinline__ float inv_rms(const float* sq, int K, float eps) {
    return rsqrtf(gemv_row_sum(sq) / K + eps);
}

// Before the PDL wait: the L2 fetches this block's rows [row0, min(rows, row0 + BLOCK_ROWS)) of W, 64
// elements (one line) per thread and step, each address clamped to the tile's last element, so every
// prefetch lies inside W (row0 = blockIdx.x * BLOCK_ROWS for a plain gemv).
template <class T>
__device__ __forceinline__ void gemv_prefetch_rows(const T* W, long long row0, long long rows, int K) {
#if GEMV_PREFETCH > 0
    long long lo = row0 * K;
    long long hi = min(rows, row0 + BLOCK_ROWS) * K - 1;
    long long step = blockIdx.x < GEMV_PREFETCH_BLOCKS ? 64 : 0;
#pragma unroll
    for (int i = 0; i < GEMV_PREFETCH; i++)
        prefetch_l2(W + min(lo + ((long long)i * blockDim.x + threadIdx.x) * step, hi));
#endif
}

}  // namespace kreg

// The entry NAME (element type T) of a kernel shaped as a gemv, (W, v, out, N, K) with W [N, K]: the L2
// prefetch of the block's rows of W (GEMV_PREFETCH), the PDL wait, then OWN(W, v, out, N, K).
#define KREG_GEMV_ENTRY(NAME, T, OWN)                                                                  \
    extern "C" __global__ void KREG_GEMV_BOUNDS NAME(const T* __restrict__ W, const T* __restrict__ v,  \
                                                     T* __restrict__ out, int N, int K) {               \
        kreg::gemv_prefetch_rows(W, (long long)blockIdx.x * BLOCK_ROWS, N, K);                        \
        kreg::pdl_begin(); /* PDL: wait first (checker/pdl.py) */                                     \
        OWN(W, v, out, N, K);                                                                         \
    }

// The entry NAME (element type T) of a kernel with an RMSNorm before its rows (W, x, w, out, N, K, eps):
// the PDL wait, then OWN(W, x, w, out, N, K, eps).
#define KREG_GEMV_NORM_ENTRY(NAME, T, OWN)                                                             \
    extern "C" __global__ void KREG_GEMV_BOUNDS NAME(const T* __restrict__ W, const T* __restrict__ x,  \
                                                     const T* __restrict__ w, T* __restrict__ out,      \
                                                     int N, int K, float eps) {                         \
        kreg::pdl_begin(); /* PDL: wait first (checker/pdl.py) */                                     \
        OWN(W, x, w, out, N, K, eps);                                                                 \
    }
