// Safe GEMV (entries gemv_bf16, gemv_f16): y[n] = sum_k W[n, k] x[k] with fp32 products and sums.
// Warp w of block b owns the ROWS rows n = (b * WARPS + w) * ROWS + r of y, written by its lane 0 only;
// W and x are only read. Lane l reads the 16-byte vectors k = l * 8 + i * 256 of each owned row (all
// ROWS rows in one loop, so ROWS loads are in flight per lane), then the warp sums its lanes with
// shuffles (a fixed order: identical bits on every launch).
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef KREG_ROWS
#define KREG_ROWS 2
#endif
constexpr int ROWS = KREG_ROWS;    // rows per warp
constexpr int WARPS = 8;           // warps per block: the launch gives 256 threads

template <class T>
__device__ __forceinline__ void gemv_own(const T* __restrict__ W, const T* __restrict__ x, T* __restrict__ y,
                                         int N, int K) {
    int lane = threadIdx.x & 31;
    long long n0 = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) acc[r] = 0.f;
    for (int k = lane * 8; k < K; k += 256) {
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
        if (lane == 0 && n0 + r < N) y[n0 + r] = kreg::Cvt<T>::from(acc[r]);
    }
}

extern "C" __global__ void gemv_bf16(const __nv_bfloat16* __restrict__ W, const __nv_bfloat16* __restrict__ x,
                                     __nv_bfloat16* __restrict__ y, int N, int K) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_own(W, x, y, N, K);
}

extern "C" __global__ void gemv_f16(const __half* __restrict__ W, const __half* __restrict__ x,
                                    __half* __restrict__ y, int N, int K) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_own(W, x, y, N, K);
}
