// Safe elementwise add: thread i owns out[i]; inputs are const __restrict__ and only read.
#include <cuda_bf16.h>

extern "C" __global__ void add_bf16(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                                    __nv_bfloat16* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}
