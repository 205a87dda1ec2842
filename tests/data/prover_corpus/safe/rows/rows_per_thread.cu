extern "C" __global__ void rows_per_thread(const float* __restrict__ x, float* __restrict__ out, int M, int K) {
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= M) return;
    float acc = 0.f;
    for (int k = 0; k < K; k++) acc += x[(long long)m * K + k];
    out[m] = acc;
}
