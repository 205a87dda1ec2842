extern "C" __global__ void rows_shfl(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float warp_sums[8];
    const float* row = x + (long long)blockIdx.x * K;
    float acc = 0.f;
    for (int k = threadIdx.x; k < K; k += 256) acc += row[k];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < 8 ? warp_sums[threadIdx.x] : 0.f;
        for (int o = 4; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
        if (threadIdx.x == 0) out[blockIdx.x] = v;
    }
}
