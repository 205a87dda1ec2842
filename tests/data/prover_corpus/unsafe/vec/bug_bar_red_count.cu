// bar.red with a thread count (here 64) completes once 64 threads have arrived: the 256 threads of a block pass
// it in four groups of two warps, in any order, so it orders nothing between groups. Thread t + 128 reads s[t]
// while thread t may not have written it yet: a race. A checker that takes bar.red for a whole-block barrier
// whatever its count sees the read ordered after the write.
extern "C" __global__ void bug_bar_red_count(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? a[i] : 0.0f;
    asm volatile("{ .reg .pred p; .reg .u32 r; setp.ne.u32 p, %0, 0; bar.red.popc.u32 r, 1, 64, p; }" :: "r"(1) : "memory");
    float o = s[(threadIdx.x + 128) & 255];
    if (i < n) out[i] = a[i] + b[i] + 0.0f * o;
}
