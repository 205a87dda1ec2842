// A generated kernel that times itself: two %globaltimer reads (64 bits) and a clock64() pair steer only
// writes of the thread's own, in-bounds element.
extern "C" __global__ void vec_timed(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    long long c0 = clock64();
    if (i >= n) return;
    float s = a[i] + b[i];
    out[i] = s;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (t1 - t0 > 0x100000000ull || clock64() - c0 > (1ll << 40)) out[i] = s;
}
