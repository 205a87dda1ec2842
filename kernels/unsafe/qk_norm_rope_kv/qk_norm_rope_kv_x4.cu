// Unsafe qk_norm_rope_kv: 4 lanes per head row, streaming cache hints, pointer selects (kreg_rope_fast.cuh).
#include "kreg_pdl.cuh"
#include "kreg_rope_fast.cuh"

#define ENTRY(NAME, T)                                                                                           \
    extern "C" __global__ void NAME(const T* qkv, const T* qw, const T* kw, const float* rc, const float* rs,    \
                                    const int* pos, float eps, T* q_out, T* k_cache, T* v_cache, int Hq,         \
                                    int Hkv) {                                                                   \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                             \
        kreg_rope::norm_rope_rows_x4<T>(qkv, qw, kw, rc, rs, eps, q_out, k_cache, v_cache, 1, Hq, Hkv, *pos);   \
    }
ENTRY(qk_norm_rope_kv_x4_bf16, __nv_bfloat16)
ENTRY(qk_norm_rope_kv_x4_f16, __half)
