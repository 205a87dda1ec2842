extern "C" __global__ void splitk_slices(const float* __restrict__ x, float* __restrict__ part, int M, int K, int S) {
    // block (m, s): row m, slice s of the columns; 128 threads reduce, thread 0 stores the partial
    __shared__ float red[128];
    int m = blockIdx.x, s = blockIdx.y, t = threadIdx.x;
    int len = (K + S - 1) / S, k0 = s * len, k1 = min(K, k0 + len);
    float acc = 0.f;
    for (int k = k0 + t; k < k1; k += 128) acc += x[(size_t)m * K + k];
    red[t] = acc;
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if (t < h) red[t] += red[t + h];
        __syncthreads();
    }
    if (t == 0) part[(size_t)s * M + m] = red[0];
}
