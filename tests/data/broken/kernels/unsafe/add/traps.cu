// BROKEN on purpose: traps (the launch fails; the variant fails alone and the tool goes on).
#include <cuda_bf16.h>
extern "C" __global__ void traps(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) __trap();
    if (i < n) out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}
