// RMSNorm over rows of bf16: one block of 256 threads per row, warp shuffles + shared memory reduction.
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                        __nv_bfloat16* __restrict__ out, int n, float eps) {
    __shared__ float partial[32];
    const __nv_bfloat16* row = x + (long long)blockIdx.x * n;
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = __bfloat162float(row[i]);
        s += v * v;
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
        if (threadIdx.x == 0) partial[0] = rsqrtf(s / n + eps);
    }
    __syncthreads();
    float r = partial[0];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        out[(long long)blockIdx.x * n + i] = __float2bfloat16(__bfloat162float(row[i]) * r * __bfloat162float(w[i]));
}
