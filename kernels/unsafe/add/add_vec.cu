// Unsafe elementwise add (entries add_bf16_vec, add_f16_vec): two 16-byte vectors per thread, a block's
// vectors contiguous, streaming (evict-first) loads and stores through uint4 pointer casts; the partial
// last vector element by element.
#include "kreg_own.cuh"

template <class T>
__device__ __forceinline__ float2 up(unsigned w) { return kreg::Cvt<T>::unpack(w); }

template <class T>
__device__ __forceinline__ uint4 add4(uint4 x, uint4 y) {
    float2 a0 = up<T>(x.x), a1 = up<T>(x.y), a2 = up<T>(x.z), a3 = up<T>(x.w);
    float2 b0 = up<T>(y.x), b1 = up<T>(y.y), b2 = up<T>(y.z), b3 = up<T>(y.w);
    return make_uint4(kreg::Cvt<T>::pack(a0.x + b0.x, a0.y + b0.y), kreg::Cvt<T>::pack(a1.x + b1.x, a1.y + b1.y),
                      kreg::Cvt<T>::pack(a2.x + b2.x, a2.y + b2.y), kreg::Cvt<T>::pack(a3.x + b3.x, a3.y + b3.y));
}

template <class T>
__device__ __forceinline__ void add_vec(const T* a, const T* b, T* out, int n) {
    long long v0 = (long long)blockIdx.x * blockDim.x * 2 + threadIdx.x, v1 = v0 + blockDim.x;
    long long nv = n / 8;
    const uint4* a4 = reinterpret_cast<const uint4*>(a);
    const uint4* b4 = reinterpret_cast<const uint4*>(b);
    uint4* o4 = reinterpret_cast<uint4*>(out);
    if (v1 < nv) {
        uint4 x0 = __ldcs(a4 + v0), y0 = __ldcs(b4 + v0), x1 = __ldcs(a4 + v1), y1 = __ldcs(b4 + v1);
        __stcs(o4 + v0, add4<T>(x0, y0));
        __stcs(o4 + v1, add4<T>(x1, y1));
        return;
    }
    if (v0 < nv) __stcs(o4 + v0, add4<T>(__ldcs(a4 + v0), __ldcs(b4 + v0)));
    if (v0 == nv || v1 == nv)          // the thread whose vector index is the partial one does the tail
        for (long long j = nv * 8; j < n; j++)
            out[j] = kreg::Cvt<T>::from(kreg::Cvt<T>::to(a[j]) + kreg::Cvt<T>::to(b[j]));
}

extern "C" __global__ void add_bf16_vec(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    add_vec(a, b, out, n);
}

extern "C" __global__ void add_f16_vec(const __half* a, const __half* b, __half* out, int n) {
    add_vec(a, b, out, n);
}
