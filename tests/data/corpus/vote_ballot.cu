// __ballot_sync, __any_sync, __all_sync and __popc of ballots.
extern "C" __global__ void vote_ballot(const int* a, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? a[i] : 0;
    unsigned bal = __ballot_sync(0xffffffff, v > 0);
    int any = __any_sync(0xffffffff, v > 1000);
    int all = __all_sync(0xffffffff, v > -1000);
    unsigned lanes = __ballot_sync(0xffffffff, (v & 1) == 0);
    if (i < n) out[i] = bal ^ (any << 1) ^ all ^ (__popc(lanes) << 8);
}
