// Approximate instructions: ex2, lg2, sin, cos, rsqrt, rcp, div.approx (compared within 2 ulp).
extern "C" __global__ void approx_math(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float* o = out + 7 * i;
    o[0] = exp2f(v);
    o[1] = __log2f(fabsf(v) + 1.0f);
    o[2] = __sinf(v);
    o[3] = __cosf(v);
    o[4] = rsqrtf(fabsf(v) + 0.5f);
    o[5] = __frcp_rn(v + 9.0f);
    o[6] = __fdividef(v, 3.0f);
}
