// Fused residual add + RMSNorm, one block of 256 threads per row. Pass 1 writes residual; after the
// block's barrier, pass 2 re-reads it in another order (elements other threads wrote) with plain loads,
// which the barrier orders after the writes
extern "C" __global__ void addnorm_reread(const float* __restrict__ x, float* residual, const float* __restrict__ w,
                                 float* __restrict__ y, int H) {
    __shared__ float red[256];
    int row = blockIdx.x * H;      // < 2^30: T <= 65536, H <= 16384
    float ss = 0.f;
    for (int k = threadIdx.x; k < H; k += 256) {
        float s = residual[row + k] + x[row + k];
        residual[row + k] = s;
        ss += s * s;
    }
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (threadIdx.x < st) red[threadIdx.x] += red[threadIdx.x + st];
        __syncthreads();
    }
    float r = rsqrtf(red[0] / H + 1e-6f);
    for (int k = threadIdx.x; k < H; k += 256) {
        int j = H - 1 - k;
        y[row + j] = residual[row + j] * r * __ldg(&w[j]);
    }
}
