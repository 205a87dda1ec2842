// Safe fused SwiGLU + down projection (entries gemv_swiglu_bf16, gemv_swiglu_f16): y[n] = sum_k W[n, k]
// a[k], a[k] = silu(g) * u with g = gate_up[k], u = gate_up[I + k] (K = I), in fp32, one rounding of y.
// The ownership scheme of the safe gemv (kernels/safe/gemv/gemv.cu, same knobs): a block of
// GROUPS * SLICES warps owns the GROUPS * ROWS rows n = GROUPS * ROWS * blockIdx.x + r of y; warp w works
// on row group w / SLICES and K slice w % SLICES, reading the 16-byte vectors k = s * 256 + lane * 8 +
// i * SLICES * 256 of its rows and of both halves of gate_up (the activation is recomputed per warp, so
// nothing is shared but the partial sums); lane 0 writes each partial to red[row][s] in shared memory;
// after the barrier (reached by every thread) thread r < GROUPS * ROWS adds row r's partials in a fixed
// order and writes y[n]. W and gate_up are only read.
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef GEMV_SLICES
#define GEMV_SLICES 4
#endif
#ifndef GEMV_ROWS
#define GEMV_ROWS 2
#endif
#ifndef GEMV_GROUPS
#define GEMV_GROUPS 2
#endif
#ifndef GEMV_PREFETCH
#define GEMV_PREFETCH 0
#endif
constexpr int SLICES = GEMV_SLICES;
constexpr int ROWS = GEMV_ROWS;
constexpr int BLOCK_ROWS = GEMV_GROUPS * ROWS;

template <class T>
__device__ __forceinline__ void gemv_swiglu_own(const T* __restrict__ W, const T* __restrict__ gate_up,
                                                T* __restrict__ y, int N, int K) {
    __shared__ float red[BLOCK_ROWS][SLICES];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int g = warp / SLICES, s = warp % SLICES;
    long long n0 = (long long)blockIdx.x * BLOCK_ROWS + g * ROWS;
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) acc[r] = 0.f;
    for (int k = s * 256 + lane * 8; k < K; k += SLICES * 256) {
        kreg::F8 a = kreg::load8<T>(gate_up + k), u = kreg::load8<T>(gate_up + K + k);
#pragma unroll
        for (int j = 0; j < 8; j++) a.v[j] = a.v[j] / (1.f + expf(-a.v[j])) * u.v[j];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            if (n0 + r < N) {
                kreg::F8 wv = kreg::load8<T>(W + (n0 + r) * K + k);
#pragma unroll
                for (int j = 0; j < 8; j++) acc[r] = fmaf(wv.v[j], a.v[j], acc[r]);
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

// Before the PDL wait: the L2 fetches this block's rows of W (as the safe gemv; clamped inside W).
template <class T>
__device__ __forceinline__ void gemv_swiglu_prefetch(const T* W, int N, int K) {
#if GEMV_PREFETCH > 0
    long long lo = (long long)blockIdx.x * BLOCK_ROWS * K;
    long long hi = min((long long)N, (long long)(blockIdx.x + 1) * BLOCK_ROWS) * K - 1;
#pragma unroll
    for (int i = 0; i < GEMV_PREFETCH; i++)
        kreg::prefetch_l2(W + min(lo + ((long long)i * blockDim.x + threadIdx.x) * 64, hi));
#endif
}

extern "C" __global__ void gemv_swiglu_bf16(const __nv_bfloat16* __restrict__ W,
                                            const __nv_bfloat16* __restrict__ gate_up,
                                            __nv_bfloat16* __restrict__ y, int N, int K) {
    gemv_swiglu_prefetch(W, N, K);
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_swiglu_own(W, gate_up, y, N, K);
}

extern "C" __global__ void gemv_swiglu_f16(const __half* __restrict__ W, const __half* __restrict__ gate_up,
                                           __half* __restrict__ y, int N, int K) {
    gemv_swiglu_prefetch(W, N, K);
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_swiglu_own(W, gate_up, y, N, K);
}
