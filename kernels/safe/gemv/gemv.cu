// Safe GEMV (entries gemv_bf16, gemv_f16): y[n] = sum_k W[n, k] x[k] with fp32 products and sums.
// The body of kreg_gemv.cuh (its knobs; by default 8 warps, 4 rows per block): a block owns the
// BLOCK_ROWS rows n = BLOCK_ROWS * blockIdx.x + r of y; its warps' partial sums meet in red[row][slice]
// in shared memory, and after the barrier (reached by every thread) thread r < BLOCK_ROWS adds the
// partials of row r in a fixed order and writes y[n]: identical bits on every launch. W and x are only
// read. It opts in to PDL: nothing but register arithmetic (and, with GEMV_PREFETCH, L2 prefetches of
// W) before its wait.
#include "kreg_gemv.cuh"

template <class T>
__device__ __forceinline__ void gemv_own(const T* __restrict__ W, const T* __restrict__ x, T* __restrict__ y,
                                         int N, int K) {
    kreg::gemv_rows(W, N, K, [&](int k) { return kreg::load8<T>(x + k); }, [] {},
                    [&](long long n, float sum) { y[n] = kreg::Cvt<T>::from(sum); });
}

KREG_GEMV_ENTRY(gemv_bf16, __nv_bfloat16, gemv_own)
KREG_GEMV_ENTRY(gemv_f16, __half, gemv_own)
