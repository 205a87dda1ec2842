// The interleaved tree reduction (stride h = 2^level, threads with t % 2h == 0 add s[t + h]) with one thread per
// element: s[t + h] leaves the row's K floats unless the block (K) is a power of two (K = 6: t = 4, h = 2).
extern "C" __global__ void bug_rowsum_interleaved(const float* __restrict__ x, float* __restrict__ out, int K) {
    extern __shared__ float s[];
    unsigned row = blockIdx.x, t = threadIdx.x;
    s[t] = x[(size_t)row * K + t];
    __syncthreads();
#pragma unroll
    for (unsigned level = 0; level < 10; ++level) {
        unsigned h = 1u << level;
        if (h >= blockDim.x) break;
        if ((t & (2 * h - 1)) == 0) s[t] += s[t + h];
        __syncthreads();
    }
    if (t == 0) out[row] = s[0];
}
