// Wrapping int32/uint32 arithmetic, shifts, signed division and remainder, high multiplies.
extern "C" __global__ void int32_overflow(const int* a, const int* b, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = b[i];
    unsigned ux = (unsigned)x, uy = (unsigned)y;
    int* o = out + 12 * i;
    o[0] = x * y + 0x7fffffff;
    o[1] = (int)(ux * uy - 12345u);
    o[2] = y != 0 ? x / y : -1;
    o[3] = y != 0 ? x % y : -1;
    o[4] = (int)(uy != 0 ? ux / uy : 7u);
    o[5] = (int)(uy != 0 ? ux % uy : 7u);
    o[6] = __mulhi(x, y);
    o[7] = (int)__umulhi(ux, uy);
    o[8] = x >> (y & 31);
    o[9] = (int)(ux >> (uy & 31)) ^ (x << (y & 15));
    o[10] = abs(x) - min(x, y) + max(x, y);
    o[11] = (int)((long long)x * y >> 17);
}
