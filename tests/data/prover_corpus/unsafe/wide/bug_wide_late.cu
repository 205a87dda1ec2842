extern "C" __global__ void bug_wide_late(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
    // widened after the 32-bit multiply: r * C wraps past 2^31 elements
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int r = blockIdx.y;
    size_t i = (size_t)(r * C + c);
    y[i] = 2.0f * x[i];
}
