// Safe qk_norm_rope_prefill (T tokens at positions start .. start+T-1, token t = blockIdx.y): 8 lanes own
// one (token, head) row (kreg_rope.cuh); each writes only its slice of q_out or of cache row start + t.
#include "kreg_rope.cuh"

#define ENTRY(NAME, T)                                                                                             \
    extern "C" __global__ void NAME(const T* __restrict__ qkv, const T* __restrict__ qw, const T* __restrict__ kw, \
                                    const float* __restrict__ rc, const float* __restrict__ rs, float eps,        \
                                    T* __restrict__ q_out, T* __restrict__ k_cache, T* __restrict__ v_cache,      \
                                    int n_tokens, int Hq, int Hkv, int start) {                                   \
        kreg_rope::norm_rope_rows<T>(qkv, qw, kw, rc, rs, eps, q_out, k_cache, v_cache, n_tokens, Hq, Hkv, start); \
    }
ENTRY(qk_norm_rope_prefill_bf16, __nv_bfloat16)
ENTRY(qk_norm_rope_prefill_f16, __half)
