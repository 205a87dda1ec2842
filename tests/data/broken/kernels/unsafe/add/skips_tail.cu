// BROKEN on purpose: only the multiple-of-8 prefix is written (caught by the poison check on ragged N).
#include <cuda_bf16.h>
extern "C" __global__ void skips_tail(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n & ~7)) out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}
