// BROKEN on purpose: computes the right sum but also writes its input a (caught by the input check).
#include <cuda_bf16.h>
extern "C" __global__ void writes_input(__nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
        if (i == n / 2) a[i] = __float2bfloat16(0.0f);
    }
}
