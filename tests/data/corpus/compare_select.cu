// Signed vs unsigned comparisons at 32 and 64 bits, selects, and 64-bit division and high multiplies.
extern "C" __global__ void compare_select(const long long* a, const long long* b, long long* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long x = a[i], y = b[i];
    unsigned long long ux = x, uy = y;
    long long* o = out + 8 * i;
    o[0] = x < y ? x : y;
    o[1] = ux < uy ? (long long)ux : (long long)uy;
    o[2] = (int)x > (int)y ? 1 : ((unsigned)x > (unsigned)y ? 2 : 3);
    o[3] = y != 0 ? x / y : 0;
    o[4] = uy != 0 ? (long long)(ux % uy) : 0;
    o[5] = __mul64hi(x, y);
    o[6] = (long long)__umul64hi(ux, uy);
    o[7] = (x >> (y & 63)) + (long long)(ux >> (uy & 63));
}
