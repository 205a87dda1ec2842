// Precise libm functions built from FMA arithmetic (range reduction tables, local memory): sinf, cosf,
// logf, sqrtf, hypotf, fmodf, cbrtf, erff, atan2f.
extern "C" __global__ void libm_exact(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    float* o = out + 9 * i;
    o[0] = sinf(a);
    o[1] = cosf(a);
    o[2] = logf(fabsf(a) + 1e-3f);
    o[3] = sqrtf(fabsf(b));
    o[4] = hypotf(a, b);
    o[5] = fmodf(a, b);
    o[6] = cbrtf(a);
    o[7] = erff(b * 0.1f);
    o[8] = atan2f(a, b);
}
