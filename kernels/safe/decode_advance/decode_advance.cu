// Safe decode_advance: thread 0 of block 0 alone reads pos and writes pos and n (every other thread of
// any launch geometry does nothing), so the writes are disjoint for all dims.
#include "kreg_pdl.cuh"

extern "C" __global__ void decode_advance(int* __restrict__ pos, int* __restrict__ n) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int p = pos[0] + 1;
        pos[0] = p;
        n[0] = p + 1;
    }
}
