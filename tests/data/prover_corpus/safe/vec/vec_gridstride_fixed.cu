extern "C" __global__ void vec_gridstride_fixed(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    for (int i = blockIdx.x * 128 + threadIdx.x; i < n; i += 132 * 128) out[i] = a[i] + b[i];
}
