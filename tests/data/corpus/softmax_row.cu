// Row softmax: block max and sum reductions through shared memory and shuffles, expf (ex2.approx inside).
extern "C" __global__ void softmax_row(const float* x, float* y, int n) {
    __shared__ float red[32];
    const float* row = x + blockIdx.x * n;
    float m = -__int_as_float(0x7f800000);
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, row[i]);
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < blockDim.x / 32; w++) m = fmaxf(m, red[w]);
    __syncthreads();
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += __expf(row[i] - m);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    s = 0.f;
    for (int w = 0; w < blockDim.x / 32; w++) s += red[w];
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[blockIdx.x * n + i] = __expf(row[i] - m) / s;
}
