// Bug: the 64-bit word holding two i32 indices is used as one index (ids[2p] + 2^32 ids[2p+1]).
extern "C" __global__ void bug_gather_wide_id(const int* __restrict__ ids, const float* __restrict__ table, float* __restrict__ out, int D) {
    int p = blockIdx.x;
    long long id = reinterpret_cast<const long long*>(ids)[p];
    for (int d = threadIdx.x; d < D; d += blockDim.x) out[(2LL * p) * D + d] = table[id * D + d];
}
