__device__ __forceinline__ void stage(float* s, const float* x, int i, int n) {
    s[threadIdx.x] = 0.f;
    if (i >= n) return;                 // the helper leaves early; its caller still reaches the barrier
    s[threadIdx.x] = x[i];
}
extern "C" __global__ void helper_early_exit(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    stage(s, x, i, n);
    __syncthreads();
    if (i < n) y[i] = s[threadIdx.x] + s[threadIdx.x ^ 1];
}
