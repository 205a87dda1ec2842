// Safe RMSNorm (entries rms_norm_bf16, rms_norm_f16): block t owns row t of y. Each thread loads up to
// NV 16-byte vectors of the row and of the weight (columns (threadIdx.x + k * blockDim.x) * 8) into
// registers, still packed, all before the block-wide reduction (kreg::block_sum, called by every
// thread), so x is read once and nothing is loaded after the barrier; then each thread writes the
// vectors it loaded. Needs H <= 8 * NV * blockDim.x (the launch sees to it).
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

#ifndef KREG_NV
#define KREG_NV 4      // vectors per thread; the launch's block must give 8 * NV * blockDim.x >= H
#endif
constexpr int NV = KREG_NV;

template <class T>
__device__ __forceinline__ void rms_norm_own(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                             int H, float eps) {
    __shared__ float red[32];
    long long row = (long long)blockIdx.x * H;
    uint4 xv[NV], wv[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = (threadIdx.x + k * blockDim.x) * 8;
        if (c < H) {
            xv[k] = kreg::load_raw(x + row + c);
            wv[k] = kreg::load_raw(w + c);
        }
    }
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = (threadIdx.x + k * blockDim.x) * 8;
        if (c < H) {
            kreg::F8 v = kreg::unpack8<T>(xv[k]);
#pragma unroll
            for (int j = 0; j < 8; j++) ss += v.v[j] * v.v[j];
        }
    }
    float r = rsqrtf(kreg::block_sum(ss, red) / H + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = (threadIdx.x + k * blockDim.x) * 8;
        if (c < H) {
            kreg::F8 v = kreg::unpack8<T>(xv[k]), g = kreg::unpack8<T>(wv[k]);
#pragma unroll
            for (int j = 0; j < 8; j++) v.v[j] = v.v[j] * r * g.v[j];
            kreg::store8(y + row + c, v);
        }
    }
}

extern "C" __global__ void rms_norm_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                         __nv_bfloat16* __restrict__ y, int H, float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_own(x, w, y, H, eps);
}

extern "C" __global__ void rms_norm_f16(const __half* __restrict__ x, const __half* __restrict__ w,
                                        __half* __restrict__ y, int H, float eps) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    rms_norm_own(x, w, y, H, eps);
}
