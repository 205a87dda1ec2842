// Unsafe RMSNorm + gemv (entries rms_norm_gemv_bf16, rms_norm_gemv_f16): warp w of block b owns the ROWS
// rows n = (b * WARPS + w) * ROWS + r of y = r * W (x * w) over the whole K (no shared memory, no
// barrier): every warp sums x^2 over all of K itself, lane sums by shuffles, lane 0 writes. Unproven
// tiling (the prover is not asked).
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef KREG_ROWS
#define KREG_ROWS 2
#endif
constexpr int ROWS = KREG_ROWS;    // rows per warp
constexpr int WARPS = 8;           // warps per block: the launch gives 256 threads

template <class T>
__device__ __forceinline__ void rms_norm_gemv_rows(const T* W, const T* x, const T* w, T* y, int N, int K, float eps) {
    int lane = threadIdx.x & 31;
    long long n0 = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
    float acc[ROWS], ss = 0.f;
#pragma unroll
    for (int r = 0; r < ROWS; r++) acc[r] = 0.f;
    for (int k = lane * 8; k < K; k += 256) {
        kreg::F8 xv = kreg::load8<T>(x + k), nw = kreg::load8<T>(w + k);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            ss = fmaf(xv.v[j], xv.v[j], ss);
            xv.v[j] *= nw.v[j];
        }
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
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    float inv = rsqrtf(ss / K + eps);
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
        if (lane == 0 && n0 + r < N) y[n0 + r] = kreg::Cvt<T>::from(acc[r] * inv);
    }
}

extern "C" __global__ void rms_norm_gemv_bf16(const __nv_bfloat16* W, const __nv_bfloat16* x, const __nv_bfloat16* w,
                                              __nv_bfloat16* y, int N, int K, float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_gemv_rows(W, x, w, y, N, K, eps);
}

extern "C" __global__ void rms_norm_gemv_f16(const __half* W, const __half* x, const __half* w, __half* y, int N, int K,
                                             float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_gemv_rows(W, x, w, y, N, K, eps);
}
