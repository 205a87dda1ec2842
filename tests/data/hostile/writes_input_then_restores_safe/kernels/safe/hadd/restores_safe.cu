// Writes an input and puts it back: the input ends unchanged, but the kernel wrote it.
extern "C" __global__ void hadd(float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    a[i] = 0.0f;
    out[i] = x + b[i];
    a[i] = x;
}
