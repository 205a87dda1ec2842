// Grid-stride loop with an explicit fma and a separate mul/add.
extern "C" __global__ void saxpy_grid_stride(const float* x, const float* y, float* out, float* out2, int n, float a) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = fmaf(a, x[i], y[i]);
        out2[i] = __fmul_rn(x[i], y[i]) + __fadd_rn(a, x[i]);
    }
}
