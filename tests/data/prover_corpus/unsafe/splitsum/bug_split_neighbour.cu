// Bug: split p writes its sum into its neighbour's row p + 1 (the last split keeps its own), so splits
// P - 2 and P - 1 both write row P - 1: a race between two blocks.
extern "C" __global__ void bug_split_neighbour(const int* __restrict__ n_ptr, const float* __restrict__ x,
                                               float* part, int H, int P) {
    int p = blockIdx.x, h = threadIdx.x;
    if (h >= H) return;
    int n = n_ptr[0];
    int C = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P);
    int start = min(n, p * C), end = min(n, start + C);
    float s = 0.f;
#pragma unroll 1
    for (int j = start; j < end; j++) s += x[(long long)j * H + h];
    int q = p + 1 < P ? p + 1 : p;
    part[(long long)q * H + h] = s;
}
