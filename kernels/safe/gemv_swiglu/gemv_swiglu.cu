// Safe fused SwiGLU + down projection (entries gemv_swiglu_bf16, gemv_swiglu_f16): y[n] = sum_k W[n, k]
// a[k], a[k] = silu(g) * u with g = gate_up[k], u = gate_up[I + k] (K = I), in fp32, one rounding of y.
// The body of kreg_gemv.cuh (the safe gemv's ownership scheme and knobs) with the activation as the
// vector operand: each warp recomputes it for its K slice (nothing is shared but the partial sums);
// after the barrier (reached by every thread) thread r < BLOCK_ROWS adds row r's partials in a fixed
// order and writes y[n]. W and gate_up are only read.
#include "kreg_gemv.cuh"

template <class T>
__device__ __forceinline__ void gemv_swiglu_own(const T* __restrict__ W, const T* __restrict__ gate_up,
                                                T* __restrict__ y, int N, int K) {
    kreg::gemv_rows(
        W, N, K,
        [&](int k) {
            kreg::F8 a = kreg::load8<T>(gate_up + k), u = kreg::load8<T>(gate_up + K + k);
#pragma unroll
            for (int j = 0; j < 8; j++) a.v[j] = a.v[j] / (1.f + expf(-a.v[j])) * u.v[j];
            return a;
        },
        [] {}, [&](long long n, float sum) { y[n] = kreg::Cvt<T>::from(sum); });
}

KREG_GEMV_ENTRY(gemv_swiglu_bf16, __nv_bfloat16, gemv_swiglu_own)
KREG_GEMV_ENTRY(gemv_swiglu_f16, __half, gemv_swiglu_own)
