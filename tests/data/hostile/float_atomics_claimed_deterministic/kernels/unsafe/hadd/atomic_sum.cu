// Each block sums out[blockIdx.x] from 32 threads' float atomics: the bits depend on their order.
extern "C" __global__ void hadd(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x;
    if (i >= n) return;
    if (threadIdx.x == 0) out[i] = 0.0f;
    __syncthreads();
    atomicAdd(&out[i], (threadIdx.x & 1 ? b[i] : a[i]) * 0.0625f);
}
