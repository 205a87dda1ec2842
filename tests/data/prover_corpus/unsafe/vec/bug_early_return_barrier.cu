extern "C" __global__ void bug_early_return_barrier(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = a[i] + b[i];
    __syncthreads();
    out[i] = s[255 - threadIdx.x];
}
