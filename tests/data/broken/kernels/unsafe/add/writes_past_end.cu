// BROKEN on purpose: every thread of the last block stores, past the end of out (caught by the guard band).
#include <cuda_bf16.h>
extern "C" __global__ void writes_past_end(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = i < n ? __bfloat162float(a[i]) + __bfloat162float(b[i]) : 0.0f;
    out[i] = __float2bfloat16(x);
}
