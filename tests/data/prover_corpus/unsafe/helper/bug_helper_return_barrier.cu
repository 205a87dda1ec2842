__device__ __forceinline__ void stage_sync(float* s, const float* x, int i, int n) {
    s[threadIdx.x] = 0.f;
    if (i >= n) return;                 // leaves before the barrier below: the others wait for it
    s[threadIdx.x] = x[i];
    __syncthreads();
}
extern "C" __global__ void bug_helper_return_barrier(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    stage_sync(s, x, i, n);
    if (i < n) y[i] = s[threadIdx.x] + s[threadIdx.x ^ 1];
}
