// The generic address of a shared variable is the shared window's base plus its offset in the window, never the
// bare offset (cvta.to.shared subtracts the window's base). A checker that takes cvta as a plain copy sees the
// two as equal and the test below as never true.
extern "C" __global__ void bug_shared_window(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long g = (unsigned long long)s, off;
    asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(off) : "l"(g));
    if (i < n) out[i] = a[i] + b[i];
    if (i < n && g != off) out[i + 100000] = 0.0f;
}
