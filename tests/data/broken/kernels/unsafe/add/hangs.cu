// BROKEN on purpose: spins until out[0] holds a value nobody writes (the emulator's step budget rejects it; on a GPU the wall clock stops it, undecided).
#include <cuda_bf16.h>
extern "C" __global__ void hangs(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, int n) {
    volatile unsigned short* flag = reinterpret_cast<volatile unsigned short*>(out);
    while (*flag != 0x1234) { }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}
