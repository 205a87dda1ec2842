// Safe SwiGLU activation (entries silu_mul_bf16, silu_mul_f16) over the output flattened to n = T * I
// elements: thread j owns out[e, e + 8) with e = (blockIdx.x * blockDim.x + j) * 8, a linear function
// of the thread (the prover shows writes disjoint for all dims); its row is t = e / I (I % 8 == 0, so
// the 8 never straddle rows) and it reads gate_up[t, c..c+8) and gate_up[t, I + c..I + c + 8),
// c = e - t * I, i.e. from gate_up + e + t * I, as 16-byte vectors.
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

template <class T>
__device__ __forceinline__ void silu_mul_own(const T* __restrict__ gate_up, T* __restrict__ out, long long n,
                                             int I) {
    long long e = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (e < n) {
        long long t = e / I;
        const T* row = gate_up + e + t * I;
        kreg::F8 g = kreg::load8(row), u = kreg::load8(row + I);
#pragma unroll
        for (int j = 0; j < 8; j++) g.v[j] = g.v[j] / (1.f + expf(-g.v[j])) * u.v[j];
        kreg::store8(out + e, g);
    }
}

extern "C" __global__ void silu_mul_bf16(const __nv_bfloat16* __restrict__ gate_up, __nv_bfloat16* __restrict__ out,
                                         long long n, int I) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    silu_mul_own(gate_up, out, n, I);
}

extern "C" __global__ void silu_mul_f16(const __half* __restrict__ gate_up, __half* __restrict__ out, long long n,
                                        int I) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    silu_mul_own(gate_up, out, n, I);
}
