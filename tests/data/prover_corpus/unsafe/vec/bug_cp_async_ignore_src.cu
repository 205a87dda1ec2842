// cp.async's optional predicate operand is ignore-src: when it is TRUE the source is not read (the copy writes
// zeros). Here the source is skipped in bounds and read past the end of a (the last block's threads with
// i >= n). A checker that reads the fourth operand as a src-size (read where it is non-zero) sees the read only
// where it is in bounds.
extern "C" __global__ void bug_cp_async_ignore_src(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned sa = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
    int inb = i < n;
    asm volatile("{ .reg .pred p; setp.ne.u32 p, %2, 0; cp.async.ca.shared.global [%0], [%1], 4, p; }"
                 :: "r"(sa), "l"(a + i), "r"(inb) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    if (i < n) out[i] = s[threadIdx.x] + a[i] + b[i];
}
