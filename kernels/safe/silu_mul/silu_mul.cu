// Safe SwiGLU activation (entries silu_mul_bf16, silu_mul_f16): block (x, t) owns 8 * blockDim.x
// columns of output row t; thread j of it owns the 8 columns c = (blockIdx.x * blockDim.x + j) * 8,
// reading gate_up[t, c..c+8) and gate_up[t, I + c..I + c + 8) as 16-byte vectors.
#include "kreg_own.cuh"

template <class T>
__device__ __forceinline__ void silu_mul_own(const T* __restrict__ gate_up, T* __restrict__ out, int I) {
    long long t = blockIdx.y;
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (c < I) {
        kreg::F8 g = kreg::load8(gate_up + t * 2 * I + c), u = kreg::load8(gate_up + t * 2 * I + I + c);
#pragma unroll
        for (int j = 0; j < 8; j++) g.v[j] = g.v[j] / (1.f + expf(-g.v[j])) * u.v[j];
        kreg::store8(out + t * I + c, g);
    }
}

extern "C" __global__ void silu_mul_bf16(const __nv_bfloat16* __restrict__ gate_up, __nv_bfloat16* __restrict__ out,
                                         int I) {
    silu_mul_own(gate_up, out, I);
}

extern "C" __global__ void silu_mul_f16(const __half* __restrict__ gate_up, __half* __restrict__ out, int I) {
    silu_mul_own(gate_up, out, I);
}
