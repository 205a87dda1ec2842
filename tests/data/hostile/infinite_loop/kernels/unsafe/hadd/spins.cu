// Spins until out[0] holds a value nobody writes.
extern "C" __global__ void hadd(const float* a, const float* b, float* out, int n) {
    volatile float* flag = out;
    while (*flag != 12345.0f) { }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
