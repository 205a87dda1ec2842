extern "C" __global__ void scale_alpha(const float* __restrict__ x, float alpha, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha > 0.f ? alpha * x[i] : 0.f;
}
