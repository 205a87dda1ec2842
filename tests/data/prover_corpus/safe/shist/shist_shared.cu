extern "C" __global__ void shist_shared(const int* __restrict__ x, unsigned* hist, int n, int B) {
    __shared__ unsigned bins[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    for (int b = t; b < 256; b += blockDim.x) bins[b] = 0u;
    __syncthreads();
    if (i < n) atomicAdd(&bins[x[i]], 1u);
    __syncthreads();
    for (int b = t; b < B; b += blockDim.x)
        if (bins[b]) atomicAdd(&hist[b], bins[b]);
}
