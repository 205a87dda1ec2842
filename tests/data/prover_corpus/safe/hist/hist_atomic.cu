extern "C" __global__ void hist_atomic(const int* __restrict__ x, unsigned* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[x[i]], 1u);
}
