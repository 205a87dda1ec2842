// Bug: __syncwarp() orders a warp only, but the first step (o = 32) reads the other warp's sums.
extern "C" __global__ void bug_syncwarp_cross(const float* __restrict__ x, float* __restrict__ out, int M, int K) {
    __shared__ float s[64];
    int m = blockIdx.x, t = threadIdx.x;
    float acc = 0.f;
    for (int k = t; k < K; k += 64) acc += x[(long long)m * K + k];
    s[t] = acc;
    __syncwarp();
#pragma unroll
    for (int o = 32; o > 0; o >>= 1) {
        if (t < o) s[t] += s[t + o];
        __syncwarp();
    }
    if (t == 0) out[m] = s[0];
}
