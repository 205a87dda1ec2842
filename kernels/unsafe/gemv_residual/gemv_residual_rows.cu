// Unsafe gemv + residual add (entries gemv_residual_bf16, gemv_residual_f16): warp w of block b owns the
// ROWS rows n = (b * WARPS + w) * ROWS + r of r <- r + W x over the whole K (kreg::gemv_warp: no shared
// memory, no barrier), lane 0 reads and writes r[n]. Unproven tiling.
#include "kreg_gemv.cuh"

constexpr int WARPS = 8;           // warps per block (the launch gives 256 threads), ROWS rows per warp

template <class T>
__device__ __forceinline__ void gemv_residual_rows(const T* W, const T* x, T* res, int N, int K) {
    long long n0 = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
    float acc[ROWS];
    kreg::gemv_warp<ROWS>(W, K, [&](int r) { return n0 + r < N; }, [&](int r) { return n0 + r; },
                          [&](int k) { return kreg::load8<T>(x + k); }, acc);
#pragma unroll
    for (int r = 0; r < ROWS; r++)
        if ((threadIdx.x & 31) == 0 && n0 + r < N)
            res[n0 + r] = kreg::Cvt<T>::from(kreg::Cvt<T>::to(res[n0 + r]) + acc[r]);
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
