// IEEE-exact instructions: sqrt.rn, div.rn, rcp.rn, fma with directed rounding, f32 add/mul rounding modes.
extern "C" __global__ void precise_math(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    float* o = out + 12 * i;
    o[0] = sqrtf(fabsf(a));
    o[1] = a / b;
    o[2] = __frcp_rn(b);
    o[3] = __fmaf_rz(a, b, 1.0f);
    o[4] = __fmaf_rd(a, b, -1.0f);
    o[5] = __fmaf_ru(a, b, 0.5f);
    o[6] = __fadd_rz(a, b);
    o[7] = __fadd_rd(a, b);
    o[8] = __fmul_ru(a, b);
    o[9] = __fmul_rz(a, b);
    o[10] = __fsqrt_rn(a * a + b);
    o[11] = __fdiv_rn(a, b + 1e-3f);
}
