// Unsafe RMSNorm + gate/up projection + SwiGLU (entries rms_norm_gemv_swiglu_bf16, _f16): warp w of
// block b owns the ROWS outputs i = (b * WARPS + w) * ROWS + r, reading gate row i and up row I + i of W
// (interleaved, 2 ROWS rows) over the whole K (kreg::gemv_warp: no shared memory, no barrier); every
// warp sums x^2 over all of K itself, the activation with __expf, lane 0 writes. Unproven tiling.
#include "kreg_gemv.cuh"

constexpr int WARPS = 8;           // warps per block (the launch gives 256 threads), ROWS rows per warp

template <class T>
__device__ __forceinline__ void rms_norm_gemv_swiglu_rows(const T* W, const T* x, const T* w, T* out, int I, int K,
                                                          float eps) {
    long long i0 = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
    float acc[2 * ROWS], ss = 0.f;
    kreg::gemv_warp<2 * ROWS>(W, K, [&](int q) { return i0 + q / 2 < I; },
                              [&](int q) { return (q & 1 ? (long long)I : 0ll) + i0 + q / 2; },
                              [&](int k) { return kreg::normed8(x, w, k, ss); }, acc);
    float inv = rsqrtf(kreg::warp_sum(ss) / K + eps);
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
        float g = acc[2 * r] * inv, u = acc[2 * r + 1] * inv;
        if ((threadIdx.x & 31) == 0 && i0 + r < I) out[i0 + r] = kreg::Cvt<T>::from(g / (1.f + __expf(-g)) * u);
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
