// Unsafe SwiGLU activation (entries silu_mul_bf16_fast, silu_mul_f16_fast): uint4 pointer casts,
// streaming (evict-first) loads and stores, fast exp (__expf) and division (__fdividef; it returns 0
// when 1 + exp(-g) overflows past 2^126, which is silu's limit there anyway).
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

template <class T>
__device__ __forceinline__ void silu_mul_fast(const T* gate_up, T* out, int I) {
    long long t = blockIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;      // vector index in the row
    if (c * 8 >= I) return;
    const uint4* gr = reinterpret_cast<const uint4*>(gate_up + t * 2 * I);
    uint4 g = __ldcs(gr + c), u = __ldcs(gr + I / 8 + c), o;
    const unsigned* pg = reinterpret_cast<const unsigned*>(&g);
    const unsigned* pu = reinterpret_cast<const unsigned*>(&u);
    unsigned* po = reinterpret_cast<unsigned*>(&o);
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float2 a = kreg::Cvt<T>::unpack(pg[j]), b = kreg::Cvt<T>::unpack(pu[j]);
        po[j] = kreg::Cvt<T>::pack(__fdividef(a.x, 1.f + __expf(-a.x)) * b.x, __fdividef(a.y, 1.f + __expf(-a.y)) * b.y);
    }
    __stcs(reinterpret_cast<uint4*>(out + t * I) + c, o);
}

extern "C" __global__ void silu_mul_bf16_fast(const __nv_bfloat16* gate_up, __nv_bfloat16* out, int I) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    silu_mul_fast(gate_up, out, I);
}

extern "C" __global__ void silu_mul_f16_fast(const __half* gate_up, __half* out, int I) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    silu_mul_fast(gate_up, out, I);
}
