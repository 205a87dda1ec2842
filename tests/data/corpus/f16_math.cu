// half and half2 arithmetic: add, sub, mul, fma, min/max, neg, abs, comparisons, conversions.
#include <cuda_fp16.h>
extern "C" __global__ void f16_math(const __half* a, const __half* b, const __half* c, __half* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half x = a[i], y = b[i], z = c[i];
    __half* o = out + 10 * i;
    o[0] = __hadd(x, y);
    o[1] = __hsub(x, y);
    o[2] = __hmul(x, y);
    o[3] = __hfma(x, y, z);
    o[4] = __hmax(x, y);
    o[5] = __hmin(x, z);
    o[6] = __hneg(__habs(x));
    o[7] = __hgt(x, y) ? x : z;
    __half2 p = __halves2half2(x, y), q = __halves2half2(z, x);
    __half2 r = __hfma2(p, q, __hadd2(p, q));
    o[8] = __low2half(r);
    o[9] = __float2half_rn(__half2float(__high2half(r)) * 3.0f);
}
