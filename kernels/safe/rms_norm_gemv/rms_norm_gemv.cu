// Safe RMSNorm fused into a gemv (entries rms_norm_gemv_bf16, rms_norm_gemv_f16): y[n] = r * sum_k
// W[n, k] x[k] w[k], r = 1 / sqrt(sum_k x[k]^2 / K + eps), fp32 products and sums, one rounding of y.
// The body of kreg_gemv.cuh (the safe gemv's ownership scheme and knobs) with x * w as the vector
// operand; in the same pass each warp sums x^2 over its K slice, and the warps of row group 0 (whose
// slices cover K) write their sums to sq[slice] in shared memory. After the barrier (reached by every
// thread) thread t < BLOCK_ROWS adds sq and row t's partials in fixed orders and writes y[n]: identical
// bits on every launch, no extra pass over x. W, x and w are only read.
#include "kreg_gemv.cuh"

template <class T>
__device__ __forceinline__ void rms_norm_gemv_own(const T* __restrict__ W, const T* __restrict__ x,
                                                  const T* __restrict__ w, T* __restrict__ y, int N, int K,
                                                  float eps) {
    __shared__ float sq[SLICES];
    float ss = 0.f;
    kreg::gemv_rows(W, N, K, [&](int k) { return kreg::normed8(x, w, k, ss); }, [&] { kreg::norm_partials_to(ss, sq); },
                    [&](long long n, float sum) { y[n] = kreg::Cvt<T>::from(sum * kreg::inv_rms(sq, K, eps)); });
}

KREG_GEMV_NORM_ENTRY(rms_norm_gemv_bf16, __nv_bfloat16, rms_norm_gemv_own)
KREG_GEMV_NORM_ENTRY(rms_norm_gemv_f16, __half, rms_norm_gemv_own)
