// Segmented shuffles: __shfl_sync with widths 16 and 8, __shfl_xor_sync with width 4.
extern "C" __global__ void shfl_idx_width(const int* a, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = a[i];
    int b16 = __shfl_sync(0xffffffff, v, 3, 16);
    int b8 = __shfl_sync(0xffffffff, v, (threadIdx.x * 5) & 7, 8);
    int x4 = __shfl_xor_sync(0xffffffff, v, 1, 4);
    int d = __shfl_down_sync(0xffffffff, v, 3, 16);
    int u = __shfl_up_sync(0xffffffff, v, 2, 8);
    out[5 * i + 0] = b16; out[5 * i + 1] = b8; out[5 * i + 2] = x4; out[5 * i + 3] = d; out[5 * i + 4] = u;
}
