// Bug: two extern __shared__ arrays are the same memory; thread t writes sa[t] while thread t + 1
// reads sb[t + 1 - 1] = sa[t] with no barrier between.
extern "C" __global__ void bug_extern_alias(const float* __restrict__ x, float* __restrict__ out, int M, int K) {
    extern __shared__ float sa[];
    extern __shared__ float sb[];
    int t = threadIdx.x;
    sa[t] = t < K ? x[(long long)blockIdx.x * K + t] : 0.f;
    if (t > 0 && t == blockDim.x - 1) out[blockIdx.x] = sb[t - 1];
}
