// fminf/fmaxf/fabsf/copysignf and comparisons on NaN, infinities, signed zeros and subnormals.
extern "C" __global__ void minmax_special(const float* x, const float* y, float* out, int* flags, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    float* o = out + 6 * i;
    o[0] = fminf(a, b);
    o[1] = fmaxf(a, b);
    o[2] = fabsf(a) + b;
    o[3] = copysignf(a, b);
    o[4] = a * b;
    o[5] = a - b;
    flags[i] = (a < b) | ((a <= b) << 1) | ((a == b) << 2) | ((a != b) << 3) | (isnan(a) << 4) | (isinf(b) << 5)
             | ((!(a >= b)) << 6) | (signbit(a) ? 128 : 0) | (isfinite(a + b) << 8);
}
