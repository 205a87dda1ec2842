// BROKEN on purpose: the right sum, but every thread also reads a[i + 1], one element past the end for
// the last thread (caught on the CPU, which observes every access; a GPU rarely faults on it).
#include <cuda_bf16.h>
extern "C" __global__ void reads_past_end(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        (void)*reinterpret_cast<const volatile unsigned short*>(a + i + 1);
        out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
    }
}
