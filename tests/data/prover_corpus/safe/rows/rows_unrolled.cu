// A block-stride loop the compiler unrolls four times: the counter steps by 4 * blockDim.x
// through a chain of adds (k2 = k + ntid, k3 = k2 + ntid, ...).
extern "C" __global__ void rows_unrolled(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[256];
    const float* row = x + (long long)blockIdx.x * K;
    float acc = 0.f;
#pragma unroll 4
    for (int k = threadIdx.x; k < K; k += blockDim.x) acc += row[k];
    s[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int j = 0; j < 256; ++j) t += s[j];
        out[blockIdx.x] = t;
    }
}
