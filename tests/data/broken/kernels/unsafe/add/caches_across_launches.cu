// BROKEN on purpose: remembers each element's answer in device globals and returns it on later launches
// (caught by the second launch with fresh inputs).
#include <cuda_bf16.h>
#define CACHED (1 << 18)
__device__ __nv_bfloat16 memo[CACHED];
__device__ unsigned char valid[CACHED];
extern "C" __global__ void caches_across_launches(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i < CACHED && valid[i]) { out[i] = memo[i]; return; }
    __nv_bfloat16 r = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
    out[i] = r;
    if (i < CACHED) { memo[i] = r; valid[i] = 1; }
}
