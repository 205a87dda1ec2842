extern "C" __global__ void bug_two_per_index(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) / 2;
    if (i < n) out[i] = a[i] + b[i];
}
