// A signalling-NaN float literal moved into a b32 register keeps its bits (mov copies the literal's 32 bits);
// a checker that reads the literal through a host float quiets it (0x7fa00000 -> 0x7fe00000) and sees the
// test below as never true.
extern "C" __global__ void bug_snan_imm(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int bits;
    asm volatile("mov.b32 %0, 0f7FA00000;" : "=r"(bits));
    if (i < n) out[i] = a[i] + b[i];
    if (i < n && bits == 0x7fa00000u) out[i + 100000] = 0.0f;
}
