extern "C" __global__ void bug_devlen_inclusive(const int* __restrict__ n, const float* __restrict__ x, float* __restrict__ out,
                                int S, int H) {
    // the loop bound is a device scalar (how many positions are valid), read once
    int h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= H) return;
    int len = n[0];
    float acc = 0.f;
    for (int j = 0; j <= len; ++j) acc += x[(size_t)j * H + h];
    out[h] = acc;
}
