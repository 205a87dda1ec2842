extern "C" __global__ void bug_ballot_inclusive(const int* __restrict__ x, int* __restrict__ out, unsigned* __restrict__ cnt, int n) {
    // every lane votes (no early exit): the positive elements go to the front of the warp's 32 slots
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    int v = i < n ? x[i] : 0;
    bool keep = v > 0;
    unsigned mask = __ballot_sync(0xffffffffu, keep);
    int base = i - lane;
    int pos = __popc(mask & ((2u << lane) - 1u));
    int total = __shfl_sync(0xffffffffu, __popc(mask), 0);
    if (keep) out[base + pos] = v;
    if (lane == 0 && base < n) cnt[base >> 5] = total;
}
