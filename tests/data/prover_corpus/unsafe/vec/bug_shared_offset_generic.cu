// A shared-window offset (cvta.to.shared) used as a generic address: the generic store goes to the global
// address equal to the offset (a few KB above zero, no buffer), not to s. A checker that takes the generic and
// the shared address of a shared variable to be one number sees a store inside s.
extern "C" __global__ void bug_shared_offset_generic(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long off;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(off) : "l"(&s[threadIdx.x]));
    float* p = (float*)off;
    *p = 1.0f;
    __syncthreads();
    if (i < n) out[i] = a[i] + b[i] + s[threadIdx.x] - 1.0f;
}
