extern "C" __global__ void bug_pred_exit_barrier(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    asm volatile("{ .reg .pred p; setp.ge.s32 p, %0, %1; @p exit; }" :: "r"(i), "r"(n));
    s[threadIdx.x] = a[i] + b[i];
    __syncthreads();
    out[i] = s[255 - threadIdx.x];
}
