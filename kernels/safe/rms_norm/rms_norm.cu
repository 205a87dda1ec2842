// Safe RMSNorm (entries rms_norm_bf16, rms_norm_f16): block t owns row t of y. Each thread holds up to
// NV 16-byte vectors of the row in registers (columns (threadIdx.x + k * blockDim.x) * 8), so x is read
// once; the sum of squares is reduced over the block (kreg::block_sum, called by every thread), then
// each thread writes the vectors it loaded. Needs H <= 8 * NV * blockDim.x (the launch sees to it).
#include "kreg_own.cuh"

constexpr int NV = 4;

template <class T>
__device__ __forceinline__ void rms_norm_own(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                             int H, float eps) {
    __shared__ float red[32];
    long long row = (long long)blockIdx.x * H;
    kreg::F8 v[NV];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = (threadIdx.x + k * blockDim.x) * 8;
        if (c < H) {
            v[k] = kreg::load8(x + row + c);
#pragma unroll
            for (int j = 0; j < 8; j++) ss += v[k].v[j] * v[k].v[j];
        }
    }
    float r = rsqrtf(kreg::block_sum(ss, red) / H + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = (threadIdx.x + k * blockDim.x) * 8;
        if (c < H) {
            kreg::F8 g = kreg::load8(w + c);
#pragma unroll
            for (int j = 0; j < 8; j++) v[k].v[j] = v[k].v[j] * r * g.v[j];
            kreg::store8(y + row + c, v[k]);
        }
    }
}

extern "C" __global__ void rms_norm_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                         __nv_bfloat16* __restrict__ y, int H, float eps) {
    rms_norm_own(x, w, y, H, eps);
}

extern "C" __global__ void rms_norm_f16(const __half* __restrict__ x, const __half* __restrict__ w,
                                        __half* __restrict__ y, int H, float eps) {
    rms_norm_own(x, w, y, H, eps);
}
