// kreg_rope.cuh: the Qwen3 attention prologue (per-head RMSNorm of q and k, then RoPE, k/v into a
// token-major [S, Hkv, 128] cache) for any number of tokens, shared by the qk_norm_rope_kv (decode)
// and qk_norm_rope_prefill kernels. Ownership style: LANES threads own one (token, head) row of 128
// and write only that row's slice; every thread of a warp reaches the shuffles (rows past the end are
// masked, not returned early); inputs are const __restrict__ and only read.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kreg_rope {

constexpr int HEAD = 128, HALF = 64;

template <class T> struct Cvt;
template <> struct Cvt<__nv_bfloat16> {
    static __device__ __forceinline__ float2 unpack(unsigned w) {          // two bf16 in one word
        return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
    }
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};
template <> struct Cvt<__half> {
    static __device__ __forceinline__ float2 unpack(unsigned w) { return __half22float2(*reinterpret_cast<__half2*>(&w)); }
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};

// 16 bytes = eight 16-bit values <-> eight floats.
template <class T> __device__ __forceinline__ void unpack8(uint4 u, float* f) {
    float2 a = Cvt<T>::unpack(u.x), b = Cvt<T>::unpack(u.y), c = Cvt<T>::unpack(u.z), d = Cvt<T>::unpack(u.w);
    f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y; f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
}
template <class T> __device__ __forceinline__ uint4 pack8(const float* f) {
    return make_uint4(Cvt<T>::pack(f[0], f[1]), Cvt<T>::pack(f[2], f[3]), Cvt<T>::pack(f[4], f[5]), Cvt<T>::pack(f[6], f[7]));
}
template <class T> __device__ __forceinline__ uint4 load16(const T* __restrict__ p) { return *reinterpret_cast<const uint4*>(p); }
template <class T> __device__ __forceinline__ void store16(T* __restrict__ p, uint4 u) { __stwb(reinterpret_cast<uint4*>(p), u); }

// Rows of the fused qkv tensor [n_tokens, Hq + 2*Hkv, 128] at positions first_pos + t, t = blockIdx.y
// (the grid is [cdiv((Hq + 2*Hkv) * 8, blockDim.x), n_tokens]). Eight lanes own one (token, head) row:
// lane l of head h is thread 8h + l of grid row t and owns elements [8l, 8l+8) and their RoPE partners
// [64+8l, 64+8l+8). Arithmetic: fp32 sum of squares, r = rsqrtf(ss/128 + eps), n = (x*r)*w,
// y1 = n1*cos - n2*sin, y2 = n2*cos + n1*sin, one rounding of y to T; v rows are copied bit for bit.
template <class T>
__device__ __forceinline__ void norm_rope_rows(const T* __restrict__ qkv, const T* __restrict__ q_norm_w,
                                               const T* __restrict__ k_norm_w, const float* __restrict__ rope_cos,
                                               const float* __restrict__ rope_sin, float eps, T* __restrict__ q_out,
                                               T* __restrict__ k_cache, T* __restrict__ v_cache, int n_tokens,
                                               int Hq, int Hkv, int first_pos) {
    const int heads = Hq + 2 * Hkv;
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const int h = g / 8;                      // this lane's head
    const int e = (g % 8) * 8;                // this lane's first element
    const int t = blockIdx.y;                 // this block's token
    const bool valid = h < heads && t < n_tokens;   // t < n_tokens always holds for the grid above
    uint4 ua = make_uint4(0u, 0u, 0u, 0u), ub = ua;
    if (valid) {
        const long long src = ((long long)t * heads + h) * HEAD + e;
        ua = load16(qkv + src);
        ub = load16(qkv + src + HALF);
    }
    float a[8], b[8];
    unpack8<T>(ua, a);
    unpack8<T>(ub, b);
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < 8; j++) ss = fmaf(b[j], b[j], fmaf(a[j], a[j], ss));
    ss += __shfl_xor_sync(0xffffffffu, ss, 1);    // the 8 lanes of a row are aligned groups of 8
    ss += __shfl_xor_sync(0xffffffffu, ss, 2);
    ss += __shfl_xor_sync(0xffffffffu, ss, 4);
    const float r = rsqrtf(ss * (1.0f / HEAD) + eps);
    if (!valid) return;
    const long long p = (long long)first_pos + t;
    if (h >= Hq + Hkv) {                          // a v head: copied into the V cache
        const long long dst = (p * Hkv + (h - Hq - Hkv)) * HEAD + e;
        store16(v_cache + dst, ua);
        store16(v_cache + dst + HALF, ub);
        return;
    }
    uint4 uwa, uwb;
    if (h < Hq) {
        uwa = load16(q_norm_w + e);
        uwb = load16(q_norm_w + e + HALF);
    } else {
        uwa = load16(k_norm_w + e);
        uwb = load16(k_norm_w + e + HALF);
    }
    float wa[8], wb[8];
    unpack8<T>(uwa, wa);
    unpack8<T>(uwb, wb);
    const long long cs = p * HALF + e;
    const float4 c0 = *reinterpret_cast<const float4*>(rope_cos + cs), c1 = *reinterpret_cast<const float4*>(rope_cos + cs + 4);
    const float4 s0 = *reinterpret_cast<const float4*>(rope_sin + cs), s1 = *reinterpret_cast<const float4*>(rope_sin + cs + 4);
    const float c[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
    const float s[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
    float ya[8], yb[8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const float n1 = a[j] * r * wa[j], n2 = b[j] * r * wb[j];
        ya[j] = n1 * c[j] - n2 * s[j];
        yb[j] = n2 * c[j] + n1 * s[j];
    }
    const uint4 oa = pack8<T>(ya), ob = pack8<T>(yb);
    if (h < Hq) {
        const long long dst = ((long long)t * Hq + h) * HEAD + e;
        store16(q_out + dst, oa);
        store16(q_out + dst + HALF, ob);
    } else {
        const long long dst = (p * Hkv + (h - Hq)) * HEAD + e;
        store16(k_cache + dst, oa);
        store16(k_cache + dst + HALF, ob);
    }
}

}  // namespace kreg_rope
