// Double precision add, mul, fma, div, sqrt, and conversions to and from float.
extern "C" __global__ void f64_math(const double* x, const double* y, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double a = x[i], b = y[i];
    double* o = out + 6 * i;
    o[0] = a + b;
    o[1] = a * b;
    o[2] = fma(a, b, -a);
    o[3] = a / b;
    o[4] = sqrt(fabs(a));
    o[5] = (double)(float)a + (double)__double2float_rz(b);
}
