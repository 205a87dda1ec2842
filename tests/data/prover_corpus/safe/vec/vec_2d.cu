extern "C" __global__ void vec_2d(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
