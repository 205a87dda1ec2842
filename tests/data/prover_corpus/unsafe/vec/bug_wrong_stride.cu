extern "C" __global__ void bug_wrong_stride(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) out[i] = a[i] + b[i];
}
