// Two reads of clock64() differ on the hardware: a checker that gives a clock one value per thread sees the
// second branch as dead and misses the write past the end.
extern "C" __global__ void bug_clock_twice(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long t0 = clock64();
    if (i < n) out[i] = a[i] + b[i];
    long long t1 = clock64();
    if (i < n && t1 != t0) out[i + n] = 0.0f;
}
