extern "C" __global__ void bug_barrier_in_divergent_loop(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[128];
    float acc = 0.f;
    for (int k = threadIdx.x; k < K; k += 128) {
        s[threadIdx.x] = x[(long long)blockIdx.x * K + k];
        __syncthreads();
        acc += s[(threadIdx.x + 1) & 127];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}
