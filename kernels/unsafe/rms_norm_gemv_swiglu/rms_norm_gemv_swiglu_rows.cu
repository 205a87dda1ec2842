// Unsafe RMSNorm + gate/up projection + SwiGLU (entries rms_norm_gemv_swiglu_bf16, _f16): warp w of
// block b owns the ROWS outputs i = (b * WARPS + w) * ROWS + r, reading gate row i and up row I + i of W
// over the whole K (no shared memory, no barrier); every warp sums x^2 over all of K itself, the
// activation with __expf, lane 0 writes. Unproven tiling.
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef KREG_ROWS
#define KREG_ROWS 2
#endif
constexpr int ROWS = KREG_ROWS;    // rows per warp
constexpr int WARPS = 8;           // warps per block: the launch gives 256 threads

template <class T>
__device__ __forceinline__ void rms_norm_gemv_swiglu_rows(const T* W, const T* x, const T* w, T* out, int I, int K,
                                                          float eps) {
    int lane = threadIdx.x & 31;
    long long i0 = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
    float ga[ROWS], ua[ROWS], ss = 0.f;
#pragma unroll
    for (int r = 0; r < ROWS; r++) ga[r] = ua[r] = 0.f;
    for (int k = lane * 8; k < K; k += 256) {
        kreg::F8 xv = kreg::load8<T>(x + k), nw = kreg::load8<T>(w + k);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            ss = fmaf(xv.v[j], xv.v[j], ss);
            xv.v[j] *= nw.v[j];
        }
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            if (i0 + r < I) {
                kreg::F8 gv = kreg::load8<T>(W + (i0 + r) * K + k), uv = kreg::load8<T>(W + (I + i0 + r) * K + k);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    ga[r] = fmaf(gv.v[j], xv.v[j], ga[r]);
                    ua[r] = fmaf(uv.v[j], xv.v[j], ua[r]);
                }
            }
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    float inv = rsqrtf(ss / K + eps);
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            ga[r] += __shfl_xor_sync(0xffffffffu, ga[r], o);
            ua[r] += __shfl_xor_sync(0xffffffffu, ua[r], o);
        }
        float g = ga[r] * inv, u = ua[r] * inv;
        if (lane == 0 && i0 + r < I) out[i0 + r] = kreg::Cvt<T>::from(g / (1.f + __expf(-g)) * u);
    }
}

extern "C" __global__ void rms_norm_gemv_swiglu_bf16(const __nv_bfloat16* W, const __nv_bfloat16* x,
                                                     const __nv_bfloat16* w, __nv_bfloat16* out, int I, int K,
                                                     float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_gemv_swiglu_rows(W, x, w, out, I, K, eps);
}

extern "C" __global__ void rms_norm_gemv_swiglu_f16(const __half* W, const __half* x, const __half* w, __half* out,
                                                    int I, int K, float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_gemv_swiglu_rows(W, x, w, out, I, K, eps);
}
