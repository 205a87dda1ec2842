// A warp-synchronous reduction in shared memory: __syncwarp() orders the steps within each warp.
extern "C" __global__ void rows_syncwarp(const float* __restrict__ x, float* __restrict__ out, int M, int K) {
    __shared__ float s[128];
    int m = blockIdx.x * 4 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    float acc = 0.f;
    if (m < M)
        for (int k = lane; k < K; k += 32) acc += x[(long long)m * K + k];
    s[threadIdx.x] = acc;
    __syncwarp();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        if (lane < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncwarp();
    }
    if (lane == 0 && m < M) out[m] = s[threadIdx.x];
}
