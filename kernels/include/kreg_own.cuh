// kreg_own.cuh: small helpers for ownership-style kernels (each thread writes only the elements it owns,
// inputs are `const T* __restrict__` and only read). bf16/f16 <-> f32 conversion, 16-byte vectors of
// eight 16-bit elements, and a block-wide sum that every thread of the block must call.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kreg {

// Scalar and pair conversions for the two 16-bit float types.
template <class T> struct Cvt;
template <> struct Cvt<__nv_bfloat16> {
    static __device__ __forceinline__ float to(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 from(float x) { return __float2bfloat16(x); }
    static __device__ __forceinline__ float2 unpack(unsigned w) {          // two bf16 in one word
        return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
    }
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};
template <> struct Cvt<__half> {
    static __device__ __forceinline__ float to(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half from(float x) { return __float2half(x); }
    static __device__ __forceinline__ float2 unpack(unsigned w) {
        return __half22float2(*reinterpret_cast<__half2*>(&w));
    }
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};

// Eight 16-bit elements as floats; loaded from / stored to 16 bytes at p (p must be 16-byte aligned:
// the element offset a multiple of 8 on a cudaMalloc'd buffer).
struct F8 {
    float v[8];
};

template <class T> __device__ __forceinline__ F8 load8(const T* __restrict__ p) {
    uint4 u = *reinterpret_cast<const uint4*>(p);
    F8 r;
    float2 a = Cvt<T>::unpack(u.x), b = Cvt<T>::unpack(u.y), c = Cvt<T>::unpack(u.z), d = Cvt<T>::unpack(u.w);
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = b.x; r.v[3] = b.y;
    r.v[4] = c.x; r.v[5] = c.y; r.v[6] = d.x; r.v[7] = d.y;
    return r;
}

// The same for a buffer this thread also writes (an inout param: no read-only cache path).
template <class T> __device__ __forceinline__ F8 load8_rw(const T* p) {
    uint4 u = *reinterpret_cast<const uint4*>(p);
    F8 r;
    float2 a = Cvt<T>::unpack(u.x), b = Cvt<T>::unpack(u.y), c = Cvt<T>::unpack(u.z), d = Cvt<T>::unpack(u.w);
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = b.x; r.v[3] = b.y;
    r.v[4] = c.x; r.v[5] = c.y; r.v[6] = d.x; r.v[7] = d.y;
    return r;
}

template <class T> __device__ __forceinline__ void store8(T* p, const F8& r) {
    uint4 u;
    u.x = Cvt<T>::pack(r.v[0], r.v[1]); u.y = Cvt<T>::pack(r.v[2], r.v[3]);
    u.z = Cvt<T>::pack(r.v[4], r.v[5]); u.w = Cvt<T>::pack(r.v[6], r.v[7]);
    *reinterpret_cast<uint4*>(p) = u;
}

// Copy 16 bytes (8 elements) from src to dst, bits unchanged (both 16-byte aligned).
template <class T> __device__ __forceinline__ void copy8(T* dst, const T* __restrict__ src) {
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}

// Sum of v over the whole block, the same value in every thread (each adds the warp sums in the same
// order). Call it from ALL threads of the block, never under a thread-dependent branch, at most once
// per kernel (it reuses `red` without a trailing barrier). blockDim.x must be a multiple of 32.
__device__ __forceinline__ float block_sum(float v, float* red /* __shared__ float[32] */) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float s = 0.f;
    int nwarps = blockDim.x >> 5;
    for (int i = 0; i < nwarps; i++) s += red[i];
    return s;
}

}  // namespace kreg
