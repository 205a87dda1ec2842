extern "C" __global__ void rows_twopass(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[128];
    const float* row = x + (long long)blockIdx.x * K;
    float acc = 0.f;
    for (int k = threadIdx.x; k < K; k += 128) acc += row[k] * row[k];
    s[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) { float t = 0.f; for (int i = 0; i < 128; i++) t += s[i]; s[0] = t; }
    __syncthreads();
    float inv = s[0];
    if (threadIdx.x == 0) out[blockIdx.x] = inv;
}
