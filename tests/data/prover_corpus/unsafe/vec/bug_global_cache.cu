__device__ float cache[1024];
extern "C" __global__ void bug_global_cache(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = a[i] + b[i]; cache[i & 1023] = v; out[i] = v; }
}
