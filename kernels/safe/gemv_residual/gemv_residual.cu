// Safe gemv with the residual add in its epilogue (entries gemv_residual_bf16, gemv_residual_f16):
// r[n] <- r[n] + sum_k W[n, k] x[k], the product and the sum in fp32 and one rounding (W x is not
// rounded to the dtype first, unlike the unfused gemv + add_rms_norm). The body of kreg_gemv.cuh (the
// safe gemv's ownership scheme and knobs); after the barrier (reached by every thread) thread
// t < BLOCK_ROWS adds row t's partials in a fixed order, reads r[n] and writes it back: r[n] is read
// and written by that thread only. W and x are only read.
#include "kreg_gemv.cuh"

template <class T>
__device__ __forceinline__ void gemv_residual_own(const T* __restrict__ W, const T* __restrict__ x, T* __restrict__ r,
                                                  int N, int K) {
    kreg::gemv_rows(W, N, K, [&](int k) { return kreg::load8<T>(x + k); }, [] {},
                    [&](long long n, float sum) { r[n] = kreg::Cvt<T>::from(kreg::Cvt<T>::to(r[n]) + sum); });
}

KREG_GEMV_ENTRY(gemv_residual_bf16, __nv_bfloat16, gemv_residual_own)
KREG_GEMV_ENTRY(gemv_residual_f16, __half, gemv_residual_own)
