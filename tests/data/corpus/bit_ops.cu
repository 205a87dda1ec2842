// popc, clz, brev, byte_perm (prmt), funnel shifts (shf), ffs, bit-field extract patterns (bfe/lop3).
extern "C" __global__ void bit_ops(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    unsigned* o = out + 12 * i;
    o[0] = __popc(x);
    o[1] = __clz(x);
    o[2] = __brev(x);
    o[3] = __byte_perm(x, y, 0x5140);
    o[4] = __byte_perm(x, y, y & 0xffff);
    o[5] = __funnelshift_l(x, y, y);
    o[6] = __funnelshift_rc(x, y, y & 63);
    o[7] = __ffs(x);
    o[8] = (x >> (y & 15)) & 0x3ff;
    o[9] = (unsigned)(((int)x << 3) >> 11);
    o[10] = (x & y) ^ (~x | (y >> 3));
    o[11] = __popcll(((unsigned long long)x << 32) | y) + __clzll((unsigned long long)y);
}
