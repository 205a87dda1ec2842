// Bug: every thread of row i / K writes out[i / K].
extern "C" __global__ void bug_div_dim(const float* __restrict__ x, float* __restrict__ out, int M, int K) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)M * K) out[i / K] = x[i];
}
