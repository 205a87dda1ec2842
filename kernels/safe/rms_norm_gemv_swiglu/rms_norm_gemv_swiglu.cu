// Safe RMSNorm + gate/up projection + SwiGLU (entries rms_norm_gemv_swiglu_bf16, _f16): out[i] =
// silu(g) * u, g = r * sum_k W[i, k] x[k] w[k], u = r * sum_k W[I + i, k] x[k] w[k] (W the fused
// gate_up [2I, K]: gate rows, then up rows), r = 1 / sqrt(sum_k x[k]^2 / K + eps); g and u stay fp32
// (not rounded, unlike the unfused gemv + silu_mul), one rounding of out. The body of kreg_gemv.cuh
// (the safe gemv's ownership scheme and knobs): a block owns the BLOCK_ROWS outputs i = BLOCK_ROWS *
// blockIdx.x + t, so its warps read gate rows i and up rows I + i (2 ROWS dot products per warp,
// gate and up interleaved: red[2t] and red[2t + 1]); x^2 is summed in the same pass, the warps of row
// group 0 (whose slices cover K) writing sq[slice]. After the barrier (reached by every thread) thread
// t < BLOCK_ROWS adds sq and its two rows' partials in fixed orders and writes out[i]. W, x and w are
// only read.
#include "kreg_gemv.cuh"

template <class T>
__device__ __forceinline__ void rms_norm_gemv_swiglu_own(const T* __restrict__ W, const T* __restrict__ x,
                                                         const T* __restrict__ w, T* __restrict__ out, int I, int K,
                                                         float eps) {
    __shared__ float red[2 * BLOCK_ROWS][SLICES];
    __shared__ float sq[SLICES];
    long long b0 = (long long)blockIdx.x * BLOCK_ROWS;
    float ss = 0.f;
    kreg::gemv_block<2 * ROWS, ROWS>(W, K, red, b0, [&](long long n0, int q) { return n0 + q / 2 < I; },
                                     [&](long long n0, int q) { return (q & 1 ? (long long)I : 0ll) + n0 + q / 2; },
                                     [&](int k) { return kreg::normed8(x, w, k, ss); });
    kreg::norm_partials_to(ss, sq);
    __syncthreads();
    long long i = b0 + threadIdx.x;
    if (threadIdx.x < BLOCK_ROWS && i < I) {
        float r = kreg::inv_rms(sq, K, eps);
        float gs = kreg::gemv_row_sum(red[2 * threadIdx.x]) * r, us = kreg::gemv_row_sum(red[2 * threadIdx.x + 1]) * r;
        out[i] = kreg::Cvt<T>::from(gs / (1.f + expf(-gs)) * us);
    }
}

KREG_GEMV_NORM_ENTRY(rms_norm_gemv_swiglu_bf16, __nv_bfloat16, rms_norm_gemv_swiglu_own)
KREG_GEMV_NORM_ENTRY(rms_norm_gemv_swiglu_f16, __half, rms_norm_gemv_swiglu_own)
