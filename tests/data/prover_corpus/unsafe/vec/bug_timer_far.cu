// A 64-bit timer read (%globaltimer) steers a write past the end: the value is above 2**32, so a checker that
// takes the register as 32 bits wide sees the test as never true.
extern "C" __global__ void bug_timer_far(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (i < n) out[i] = a[i] + b[i];
    if (i < n && t == 0x123456789abcull) out[i + 100000] = 0.0f;
}
