// BROKEN on purpose (claims to be deterministic): each block takes a ticket from a global atomic counter
// and rounds toward zero when (arrival index in this launch + launch number) is odd. Always within one bf16 rounding, but the
// bits depend on block arrival order and launch history (caught by the repeat-launch check).
#include <cuda_bf16.h>
__device__ unsigned ticket;
extern "C" __global__ void nondeterministic_atomics(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    __shared__ unsigned t;
    if (threadIdx.x == 0) t = atomicAdd(&ticket, 1u);
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = __bfloat162float(a[i]) + __bfloat162float(b[i]);
    out[i] = ((t % gridDim.x + t / gridDim.x) & 1) ? __float2bfloat16_rz(x) : __float2bfloat16(x);
}
