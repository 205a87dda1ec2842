// One thread per element; the (row, column) of the flat index come from a division by the dim N.
extern "C" __global__ void transpose_flat(const float* __restrict__ x, float* __restrict__ out, int M, int N) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (unsigned)M * N) return;
    unsigned m = i / N, n = i % N;
    out[n * M + m] = x[i];
}
