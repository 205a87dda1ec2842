extern "C" __global__ void ticket_compact(const int* __restrict__ x, unsigned* cnt, int* __restrict__ out, int n) {
    // every positive element takes the next slot from the counter (at most n tickets: slots < n)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0) {
        unsigned slot = atomicAdd(cnt, 1u);
        out[slot] = x[i];
    }
}
