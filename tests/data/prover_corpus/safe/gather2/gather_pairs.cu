// One 64-bit load fetches two i32 indices; each 32-bit half is an index in [0, V).
extern "C" __global__ void gather_pairs(const int* __restrict__ ids, const float* __restrict__ table, float* __restrict__ out, int D) {
    int p = blockIdx.x;
    unsigned long long two = reinterpret_cast<const unsigned long long*>(ids)[p];
    long long lo = (int)(two & 0xffffffffu), hi = (int)(two >> 32);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        out[(2LL * p) * D + d] = table[lo * D + d];
        out[(2LL * p + 1) * D + d] = table[hi * D + d];
    }
}
