// Warp sum and max with __shfl_down_sync; lane 0 writes.
extern "C" __global__ void warp_reduce_down(const float* x, float* sums, int* maxes, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    int m = i < n ? __float_as_int(x[i]) & 0xffff : -1;
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_down_sync(0xffffffff, v, o);
        m = max(m, __shfl_down_sync(0xffffffff, m, o));
    }
    if ((threadIdx.x & 31) == 0) { sums[i >> 5] = v; maxes[i >> 5] = m; }
}
