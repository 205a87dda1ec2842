extern "C" __global__ void bug_block_too_big(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[256];
    s[threadIdx.x] = threadIdx.x < K ? x[(long long)blockIdx.x * K + threadIdx.x] : 0.f;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[0] + s[255];
}
