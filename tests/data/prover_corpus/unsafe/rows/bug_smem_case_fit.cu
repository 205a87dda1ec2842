// Bug: the row is staged in a 4096-float shared tile; every named case has K <= 4096, so a proof per
// case holds, but any K > 4096 writes past the tile. Only an all-dims proof may call this safe.
extern "C" __global__ void bug_smem_case_fit(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[4096];
    const float* row = x + (long long)blockIdx.x * K;
    for (int k = threadIdx.x; k < K; k += 256) s[k] = row[k];
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int k = 0; k < K; ++k) t += s[k];
        out[blockIdx.x] = t;
    }
}
