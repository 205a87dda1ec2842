// int <-> float <-> half conversions with every rounding mode and saturation.
#include <cuda_fp16.h>
extern "C" __global__ void conversions(const float* f, const double* d, const long long* l, int* oi, float* of, unsigned short* oh, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = f[i];
    double y = d[i];
    long long z = l[i];
    int* a = oi + 10 * i;
    a[0] = __float2int_rn(x); a[1] = __float2int_rz(x); a[2] = __float2int_rd(x); a[3] = __float2int_ru(x);
    a[4] = (int)__float2uint_rn(x); a[5] = __double2int_rn(y); a[6] = (int)(long long)x;
    a[7] = (int)(z >> 3); a[8] = (int)(unsigned char)(z); a[9] = (int)(signed char)(z >> 8);
    float* b = of + 10 * i;
    b[0] = __int2float_rn((int)z); b[1] = __int2float_rz((int)z); b[2] = __int2float_rd((int)z); b[3] = __int2float_ru((int)z);
    b[4] = __ll2float_rn(z); b[5] = __double2float_rn(y); b[6] = __double2float_rz(y); b[7] = __double2float_rd(y);
    b[8] = __saturatef(x); b[9] = rintf(x) + truncf(x) + floorf(x) + ceilf(x);
    unsigned short* h = oh + 4 * i;
    h[0] = __half_as_ushort(__float2half_rn(x)); h[1] = __half_as_ushort(__float2half_rz(x));
    h[2] = __half_as_ushort(__double2half(y)); h[3] = __half_as_ushort(__int2half_rn((int)z));
}
