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
    __shared__ float red[BLOCK_ROWS][SLICES];
    __shared__ float sq[SLICES];
    long long b0 = (long long)blockIdx.x * BLOCK_ROWS;
    float ss = 0.f;
    kreg::gemv_block<ROWS, ROWS>(W, K, red, b0, [&](long long n0, int r) { return n0 + r < N; },
                                 [&](long long n0, int r) { return n0 + r; },
                                 [&](int k) { return kreg::normed8(x, w, k, ss); });
    kreg::norm_partials_to(ss, sq);
    __syncthreads();
    long long n = b0 + threadIdx.x;
    if (threadIdx.x < BLOCK_ROWS && n < N)
        y[n] = kreg::Cvt<T>::from(kreg::gemv_row_sum(red[threadIdx.x]) * kreg::inv_rms(sq, K, eps));
}

extern "C" __global__ void KREG_GEMV_BOUNDS rms_norm_gemv_bf16(const __nv_bfloat16* __restrict__ W, const __nv_bfloat16* __restrict__ x,
                                              const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y,
                                              int N, int K, float eps) {
    kreg::gemv_prefetch_rows(W, (long long)blockIdx.x * BLOCK_ROWS, N, K);
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_gemv_own(W, x, w, y, N, K, eps);
}

extern "C" __global__ void KREG_GEMV_BOUNDS rms_norm_gemv_f16(const __half* __restrict__ W, const __half* __restrict__ x,
                                             const __half* __restrict__ w, __half* __restrict__ y, int N, int K,
                                             float eps) {
    kreg::gemv_prefetch_rows(W, (long long)blockIdx.x * BLOCK_ROWS, N, K);
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_gemv_own(W, x, w, y, N, K, eps);
}
