// Unsafe decode_advance: no guard; correct only because the launch has exactly one thread (the
// metadata's geometry, not the kernel, keeps it race-free).
#include "kreg_pdl.cuh"

extern "C" __global__ void decode_advance_one(int* pos, int* n) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    int p = pos[0] + 1;
    pos[0] = p;
    n[0] = p + 1;
}
