// One block of 256 threads per row, one element per thread: the threads past the row return before the
// barrier (divergence when D < 256) and the flipped read s[D - 1 - t] leaves s when D > 256; safe only when
// the block exactly covers the row (blockDim.x == D).
extern "C" __global__ void bug_row_flip_early_return(const float* __restrict__ x, float* __restrict__ out, int D) {
    __shared__ float s[256];
    int row = blockIdx.x, t = threadIdx.x;
    if (t >= D) return;
    s[t] = x[(size_t)row * D + t];
    __syncthreads();
    out[(size_t)row * D + t] = s[D - 1 - t];
}
