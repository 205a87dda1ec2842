// __syncwarp, __reduce_*_sync (redux), __match_any_sync / __match_all_sync, __dp4a / __dp2a, __mul24, __sad.
extern "C" __global__ void warp_intrinsics(const int* a, const unsigned* b, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = a[i];
    unsigned u = b[i];
    int* o = out + 10 * i;
    o[0] = __reduce_add_sync(0xffffffff, v);
    o[1] = __reduce_min_sync(0xffffffff, v);
    o[2] = (int)__reduce_max_sync(0xffffffff, u);
    o[3] = (int)__reduce_or_sync(0xffffffff, u & 0xff);
    __syncwarp();
    o[4] = (int)__match_any_sync(0xffffffff, v & 3);
    int pred;
    o[5] = (int)__match_all_sync(0xffffffff, v >> 30, &pred) ^ pred;
    o[6] = __dp4a(v, (int)u, 7);
    o[7] = (int)__dp2a_lo(u, (unsigned)v, 3u) + __dp2a_hi(v, (int)u, -5);
    o[8] = __mul24(v, (int)u) + (int)__umul24(u, (unsigned)v);
    o[9] = (int)__sad(v, (int)u, 11u) + (int)__usad(u, (unsigned)v, 1u);
}
