// The output pointer goes through integer bit operations (out is 4-aligned, so p == out): its
// provenance is decided by its address.
extern "C" __global__ void vec_ptr_bits(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float* p = (float*)((unsigned long long)out & ~3ull);
    if (i < n) p[i] = a[i] + b[i];
}
