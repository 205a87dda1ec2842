// kreg_rope_fast.cuh: the unsafe twin of kreg_rope.cuh's norm_rope_rows. Four lanes own a head row
// (each 16 elements of each half: four 16-byte loads in flight per thread, two shuffles), the qkv
// stream is read with evict-first loads (ld.global.cs) and outputs stored with streaming stores.
#pragma once
#include "kreg_rope.cuh"

namespace kreg_rope {

template <class T>
__device__ __forceinline__ void norm_rope_rows_x4(const T* qkv, const T* q_norm_w, const T* k_norm_w,
                                                  const float* rope_cos, const float* rope_sin, float eps, T* q_out,
                                                  T* k_cache, T* v_cache, int n_tokens, int Hq, int Hkv,
                                                  int first_pos) {
    const int heads = Hq + 2 * Hkv;
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const int item = g >> 2;
    const int e = (g & 3) * 16;
    const bool valid = item < n_tokens * heads;
    const int t = item / heads;
    const int h = item - t * heads;
    uint4 u[4] = {};
    if (valid) {
        const uint4* src = reinterpret_cast<const uint4*>(qkv + ((long long)t * heads + h) * HEAD + e);
        u[0] = __ldcs(src);
        u[1] = __ldcs(src + 1);
        u[2] = __ldcs(src + HALF / 8);
        u[3] = __ldcs(src + HALF / 8 + 1);
    }
    float a[16], b[16];
    unpack8<T>(u[0], a);
    unpack8<T>(u[1], a + 8);
    unpack8<T>(u[2], b);
    unpack8<T>(u[3], b + 8);
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < 16; j++) ss = fmaf(b[j], b[j], fmaf(a[j], a[j], ss));
    ss += __shfl_xor_sync(0xffffffffu, ss, 1);
    ss += __shfl_xor_sync(0xffffffffu, ss, 2);
    const float r = rsqrtf(ss * (1.0f / HEAD) + eps);
    if (!valid) return;
    const long long p = (long long)first_pos + t;
    if (h >= Hq + Hkv) {
        uint4* dst = reinterpret_cast<uint4*>(v_cache + (p * Hkv + (h - Hq - Hkv)) * HEAD + e);
        __stcs(dst, u[0]);
        __stcs(dst + 1, u[1]);
        __stcs(dst + HALF / 8, u[2]);
        __stcs(dst + HALF / 8 + 1, u[3]);
        return;
    }
    const uint4* wp = reinterpret_cast<const uint4*>((h < Hq ? q_norm_w : k_norm_w) + e);
    float wa[16], wb[16];
    unpack8<T>(__ldg(wp), wa);
    unpack8<T>(__ldg(wp + 1), wa + 8);
    unpack8<T>(__ldg(wp + HALF / 8), wb);
    unpack8<T>(__ldg(wp + HALF / 8 + 1), wb + 8);
    const float4* cp = reinterpret_cast<const float4*>(rope_cos + p * HALF + e);
    const float4* sp = reinterpret_cast<const float4*>(rope_sin + p * HALF + e);
    float ya[16], yb[16];
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const float4 c4 = __ldg(cp + q), s4 = __ldg(sp + q);
        const float c[4] = {c4.x, c4.y, c4.z, c4.w}, s[4] = {s4.x, s4.y, s4.z, s4.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int j = 4 * q + k;
            const float n1 = a[j] * r * wa[j], n2 = b[j] * r * wb[j];
            ya[j] = n1 * c[k] - n2 * s[k];
            yb[j] = n2 * c[k] + n1 * s[k];
        }
    }
    T* out = h < Hq ? q_out + ((long long)t * Hq + h) * HEAD + e : k_cache + (p * Hkv + (h - Hq)) * HEAD + e;
    uint4* dst = reinterpret_cast<uint4*>(out);
    __stcs(dst, pack8<T>(ya));
    __stcs(dst + 1, pack8<T>(ya + 8));
    __stcs(dst + HALF / 8, pack8<T>(yb));
    __stcs(dst + HALF / 8 + 1, pack8<T>(yb + 8));
}

}  // namespace kreg_rope
