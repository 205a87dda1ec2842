// Safe elementwise add (bf16 entry add_bf16, f16 entry add_f16): thread i owns out[8i, 8i + 8). A full
// vector is one 16-byte load of a and of b and one 16-byte store; the partial last vector goes element
// by element. Inputs are const __restrict__ and only read.
#include "kreg_own.cuh"

template <class T>
__device__ __forceinline__ void add_own(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                        int n) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i + 8 <= n) {
        kreg::F8 x = kreg::load8(a + i), y = kreg::load8(b + i);
#pragma unroll
        for (int k = 0; k < 8; k++) x.v[k] += y.v[k];
        kreg::store8(out + i, x);
    } else {
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (i + k < n) out[i + k] = kreg::Cvt<T>::from(kreg::Cvt<T>::to(a[i + k]) + kreg::Cvt<T>::to(b[i + k]));
    }
}

extern "C" __global__ void add_bf16(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                                    __nv_bfloat16* __restrict__ out, int n) {
    add_own(a, b, out, n);
}

extern "C" __global__ void add_f16(const __half* __restrict__ a, const __half* __restrict__ b,
                                   __half* __restrict__ out, int n) {
    add_own(a, b, out, n);
}
