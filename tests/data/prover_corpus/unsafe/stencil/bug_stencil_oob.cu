extern "C" __global__ void bug_stencil_oob(const float* __restrict__ x, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float r = i + 1 < n ? x[i + 1] : 0.f;
    out[i] = x[i - 1] + x[i] + r;
}
