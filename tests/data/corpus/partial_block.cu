// Blocks of 48 threads (a partial second warp): shared reduction and per-warp shuffles with the active lanes.
extern "C" __global__ void partial_block(const int* a, int* out, int n) {
    __shared__ int s[48];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? a[i] : 0;
    s[threadIdx.x] = v;
    __syncthreads();
    int acc = 0;
    for (int k = 0; k <= (int)threadIdx.x; k++) acc += s[k];
    unsigned mask = threadIdx.x < 32 ? 0xffffffffu : 0x0000ffffu;
    int nb = __shfl_xor_sync(mask, acc, 1);
    if (i < n) out[i] = acc * 2 + nb;
}
