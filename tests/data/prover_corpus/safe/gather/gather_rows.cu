extern "C" __global__ void gather_rows(const int* __restrict__ ids, const float* __restrict__ table, float* __restrict__ out, int D) {
    int t = blockIdx.x;
    long long id = ids[t];
    for (int d = threadIdx.x; d < D; d += blockDim.x) out[(long long)t * D + d] = table[id * D + d];
}
