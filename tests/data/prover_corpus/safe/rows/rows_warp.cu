extern "C" __global__ void rows_warp(const float* __restrict__ x, float* __restrict__ out, int M, int K) {
    int m = blockIdx.x * 4 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (m >= M) return;
    float acc = 0.f;
    for (int k = lane; k < K; k += 32) acc += x[(long long)m * K + k];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (lane == 0) out[m] = acc;
}
