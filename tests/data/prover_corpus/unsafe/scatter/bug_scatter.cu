extern "C" __global__ void bug_scatter(const int* __restrict__ idx, const float* __restrict__ a, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[idx[i]] = a[i];
}
