extern "C" __global__ void bug_write_input(float* a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = a[i] + b[i]; a[i] = 0.f; }
}
