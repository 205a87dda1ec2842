// Bug: a pointer rebuilt as out + (a - out), the difference passed through a shuffle, writes the input a.
extern "C" __global__ void bug_launder_ptr(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long d = (const char*)a - (const char*)out;
    d = __shfl_sync(0xffffffff, d, 0);
    float* p = (float*)((char*)out + d);
    if (i < n) p[i] = a[i] + b[i];
}
