// PTX labels are local to the { } block that declares them, so one inline-asm snippet with a label may be
// inlined twice. The branch of the first copy goes to the first copy's label; a front end that keeps one label
// table for the whole kernel sends it to the second copy's, past the write between the two.
#define SKIP_IF(x, c) asm volatile("{ .reg .pred p; setp.ne.u32 p, %1, 0; @p bra SKIP; mov.u32 %0, 0; SKIP: }" \
                                   : "+r"(x) : "r"((unsigned)(c)))
extern "C" __global__ void bug_scoped_label(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = 1, y = 1;
    if (i < n) out[i] = a[i] + b[i];
    SKIP_IF(x, i < n);
    if (i < n && x == 1) out[i + 100000] = 0.0f;      // reached on the GPU: the first copy skips its mov
    SKIP_IF(y, i < n);
}
