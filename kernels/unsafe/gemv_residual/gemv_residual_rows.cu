// Unsafe gemv + residual add (entries gemv_residual_bf16, gemv_residual_f16): warp w of block b owns the
// ROWS rows n = (b * WARPS + w) * ROWS + r of r <- r + W x over the whole K (no shared memory, no
// barrier), lane sums by shuffles, lane 0 reads and writes r[n]. Unproven tiling.
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef KREG_ROWS
#define KREG_ROWS 2
#endif
constexpr int ROWS = KREG_ROWS;    // rows per warp
constexpr int WARPS = 8;           // warps per block: the launch gives 256 threads

template <class T>
__device__ __forceinline__ void gemv_residual_rows(const T* W, const T* x, T* res, int N, int K) {
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
        if (lane == 0 && n0 + r < N) res[n0 + r] = kreg::Cvt<T>::from(kreg::Cvt<T>::to(res[n0 + r]) + acc[r]);
    }
}

extern "C" __global__ void gemv_residual_bf16(const __nv_bfloat16* W, const __nv_bfloat16* x, __nv_bfloat16* r, int N,
                                              int K) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_residual_rows(W, x, r, N, K);
}

extern "C" __global__ void gemv_residual_f16(const __half* W, const __half* x, __half* r, int N, int K) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_residual_rows(W, x, r, N, K);
}
