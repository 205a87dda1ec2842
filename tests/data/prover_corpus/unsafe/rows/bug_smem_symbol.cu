// rows_shared, correct by the PTX ISA, but with a namespace-scope constant named SMEM: NVRTC emits it as
// `.global .u32 SMEM`, and ptxas relocates the shared addresses of every entry but the last against that
// symbol (checker/toolchain.py), so on the GPU the first entry's shared accesses leave the block's shared
// memory. Two entries: the proven one (bug_smem_symbol) is the first.
constexpr int SMEM = 256 * 4;

template <int B>
__device__ __forceinline__ void rows(const float* __restrict__ x, float* __restrict__ out, int K) {
    __shared__ float s[SMEM / 4];
    const float* row = x + (long long)blockIdx.x * K;
    float acc = 0.f;
    for (int k = threadIdx.x; k < K; k += B) acc += row[k];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int st = B / 2; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void bug_smem_symbol(const float* __restrict__ x, float* __restrict__ out, int K) {
    rows<256>(x, out, K);
}

extern "C" __global__ void bug_smem_symbol_128(const float* __restrict__ x, float* __restrict__ out, int K) {
    rows<128>(x, out, K);
}
