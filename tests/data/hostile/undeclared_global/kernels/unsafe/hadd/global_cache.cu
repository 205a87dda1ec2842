// Keeps a[0] in a __device__ global between launches.
__device__ float cached;
__device__ int have;
extern "C" __global__ void hadd(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0 && !have) { cached = a[0]; have = 1; }
    if (i < n) out[i] = a[i] + b[i] + (i == 0 ? cached - a[0] : 0.0f);
}
