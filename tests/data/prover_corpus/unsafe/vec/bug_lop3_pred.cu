// lop3.BoolOp.b32 d|p: d is the 32-bit logical result, p = (d != 0) BoolOp q. With immLut 0xF0 (d = a) here
// d is the thread's index. A checker that reads the d|p pair as a comparison's predicate pair (d a 0/1 flag,
// p its negation) sees d == i as false for every i >= 2.
extern "C" __global__ void bug_lop3_pred(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned d, p;
    asm volatile("{ .reg .pred p, q; setp.ne.u32 q, %2, %2; lop3.or.b32 %0|p, %2, %2, %2, 0xF0, q; selp.u32 %1, 1, 0, p; }"
                 : "=r"(d), "=r"(p) : "r"((unsigned)i));
    if (i < n) out[i] = a[i] + b[i];
    if (i < n && i >= 2 && d == (unsigned)i && p == 1) out[i + 100000] = 0.0f;
}
