extern "C" __global__ void bug_smem_overflow(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[256];
    s[threadIdx.x + 1] = threadIdx.x < K ? x[(long long)blockIdx.x * K + threadIdx.x] : 0.f;
    __syncthreads();
    if (threadIdx.x == 0) { float t = 0.f; for (int i = 1; i <= 256; i++) t += s[i]; out[blockIdx.x] = t; }
}
