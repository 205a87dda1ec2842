// bf16 and bf16x2 arithmetic and conversions with several rounding modes.
#include <cuda_bf16.h>
extern "C" __global__ void bf16_math(const __nv_bfloat16* a, const __nv_bfloat16* b, const float* f, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_bfloat16 x = a[i], y = b[i];
    __nv_bfloat16* o = out + 10 * i;
    o[0] = __hadd(x, y);
    o[1] = __hmul(x, y);
    o[2] = __hfma(x, y, a[(i + 1) % n]);
    o[3] = __hsub(x, y);
    o[4] = __float2bfloat16_rn(f[i]);
    o[5] = __float2bfloat16_rz(f[i]);
    o[6] = __float2bfloat16_rd(f[i]);
    o[7] = __float2bfloat16_ru(f[i]);
    __nv_bfloat162 p = __floats2bfloat162_rn(f[i], f[i] * 0.5f);
    __nv_bfloat162 q = __hmax2(p, __halves2bfloat162(x, y));
    o[8] = __low2bfloat16(q);
    o[9] = __high2bfloat16(__hadd2(q, p));
}
