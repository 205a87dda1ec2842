// Safe qk_norm_rope_kv (decode, one token at the device-scalar position pos[0]): 8 lanes own one head
// row (kreg_rope.cuh); each writes only its slice of q_out or of cache row pos[0].
#include "kreg_pdl.cuh"
#include "kreg_rope.cuh"

template <class T>
__device__ __forceinline__ void decode(const T* __restrict__ qkv, const T* __restrict__ qw, const T* __restrict__ kw,
                                       const float* __restrict__ rc, const float* __restrict__ rs,
                                       const int* __restrict__ pos, float eps, T* __restrict__ q_out,
                                       T* __restrict__ k_cache, T* __restrict__ v_cache, int Hq, int Hkv) {
    kreg_rope::norm_rope_rows<T>(qkv, qw, kw, rc, rs, eps, q_out, k_cache, v_cache, 0, 1, Hq, Hkv, pos[0]);
}

#define ENTRY(NAME, T)                                                                                               \
    extern "C" __global__ void NAME(const T* __restrict__ qkv, const T* __restrict__ qw, const T* __restrict__ kw,   \
                                    const float* __restrict__ rc, const float* __restrict__ rs,                     \
                                    const int* __restrict__ pos, float eps, T* __restrict__ q_out,                  \
                                    T* __restrict__ k_cache, T* __restrict__ v_cache, int Hq, int Hkv) {            \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                                  \
        decode<T>(qkv, qw, kw, rc, rs, pos, eps, q_out, k_cache, v_cache, Hq, Hkv);                                  \
    }
ENTRY(qk_norm_rope_kv_bf16, __nv_bfloat16)
ENTRY(qk_norm_rope_kv_f16, __half)
