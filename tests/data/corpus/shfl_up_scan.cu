// Inclusive warp scan with __shfl_up_sync, integer and float.
extern "C" __global__ void shfl_up_scan(const int* a, const float* f, int* out, float* fout) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    int v = a[i];
    float w = f[i];
    for (int o = 1; o < 32; o <<= 1) {
        int t = __shfl_up_sync(0xffffffff, v, o);
        float u = __shfl_up_sync(0xffffffff, w, o);
        if (lane >= o) { v += t; w += u; }
    }
    out[i] = v;
    fout[i] = w;
}
