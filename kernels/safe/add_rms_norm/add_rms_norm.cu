// Safe residual add + RMSNorm (entries add_rms_norm_bf16, add_rms_norm_f16): block t owns row t of
// residual (read, then written by the same thread at the same columns) and of y. Each thread keeps the
// fp32 sums s = residual + x of up to NV 16-byte vectors (columns (threadIdx.x + k * blockDim.x) * 8)
// in registers, stores s rounded back to residual, reduces the sum of squares over the block
// (kreg::block_sum, called by every thread), then writes y = s * rsqrt(mean + eps) * w.
// Needs H <= 8 * NV * blockDim.x (the launch sees to it).
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef KREG_NV
#define KREG_NV 4      // vectors per thread; the launch's block must give 8 * NV * blockDim.x >= H
#endif
constexpr int NV = KREG_NV;

template <class T>
__device__ __forceinline__ void add_rms_norm_own(const T* __restrict__ x, T* __restrict__ residual,
                                                 const T* __restrict__ w, T* __restrict__ y, int H, float eps) {
    __shared__ float red[32];
    long long row = (long long)blockIdx.x * H;
    kreg::F8 s[NV];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = (threadIdx.x + k * blockDim.x) * 8;
        if (c < H) {
            kreg::F8 a = kreg::load8(x + row + c);
            s[k] = kreg::load8_rw(residual + row + c);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                s[k].v[j] += a.v[j];
                ss += s[k].v[j] * s[k].v[j];
            }
            kreg::store8(residual + row + c, s[k]);
        }
    }
    float r = rsqrtf(kreg::block_sum(ss, red) / H + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = (threadIdx.x + k * blockDim.x) * 8;
        if (c < H) {
            kreg::F8 g = kreg::load8(w + c);
#pragma unroll
            for (int j = 0; j < 8; j++) s[k].v[j] = s[k].v[j] * r * g.v[j];
            kreg::store8(y + row + c, s[k]);
        }
    }
}

extern "C" __global__ void add_rms_norm_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ residual,
                                             const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y,
                                             int H, float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    add_rms_norm_own(x, residual, w, y, H, eps);
}

extern "C" __global__ void add_rms_norm_f16(const __half* __restrict__ x, __half* __restrict__ residual,
                                            const __half* __restrict__ w, __half* __restrict__ y, int H, float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    add_rms_norm_own(x, residual, w, y, H, eps);
}
