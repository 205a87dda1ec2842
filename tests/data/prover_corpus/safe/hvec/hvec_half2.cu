#include <cuda_fp16.h>
extern "C" __global__ void hvec_half2(const __half2* __restrict__ a, const __half2* __restrict__ b, __half2* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) out[i] = __hadd2(a[i], b[i]);
}
