extern "C" __global__ void kv_write(const int* __restrict__ pos, const float* __restrict__ val, float* cache, int D) {
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    if (d < D) cache[(long long)pos[0] * D + d] = val[d];
}
