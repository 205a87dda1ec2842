extern "C" __global__ void bug_ticket_reread(const int* __restrict__ x, unsigned* cnt, int* __restrict__ out, int n) {
    // the ticket is read back from the counter after the increment: two threads may read the same count
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0) {
        atomicAdd(cnt, 1u);
        unsigned slot = *cnt - 1u;
        out[slot] = x[i];
    }
}
