extern "C" __global__ void vec_pred_exit(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int base = blockIdx.x * blockDim.x;
    // the whole block leaves together: the barrier below is not divergent
    asm volatile("{ .reg .pred p; setp.ge.s32 p, %0, %1; @p exit; }" :: "r"(base), "r"(n));
    int i = base + threadIdx.x;
    s[threadIdx.x] = i < n ? a[i] + b[i] : 0.f;
    __syncthreads();
    int j = base + 255 - threadIdx.x;
    if (j < n) out[j] = s[255 - threadIdx.x];
}
