// BROKEN on purpose: correct except that the last element is NaN when n is not a multiple of 8
// (one shape class; caught by the reference comparison on ragged shapes only).
#include <cuda_bf16.h>
extern "C" __global__ void nan_when_ragged(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = __bfloat162float(a[i]) + __bfloat162float(b[i]);
    if ((n & 7) && i == n - 1) x = __int_as_float(0x7fc00000);
    out[i] = __float2bfloat16(x);
}
