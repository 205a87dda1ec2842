extern "C" __global__ void rows_shared(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[256];
    const float* row = x + (long long)blockIdx.x * K;
    float acc = 0.f;
    for (int k = threadIdx.x; k < K; k += 256) acc += row[k];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
