extern "C" __global__ void bug_hist_plain(const int* __restrict__ x, unsigned* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) hist[x[i]] += 1u;
}
