// Bug: the split's end is not clamped to n, so the last split loops up to P*C - 1 >= n; with n = S
// (and C*P > n) it reads rows past the end of x.
extern "C" __global__ void bug_split_past_n(const int* __restrict__ n_ptr, const float* __restrict__ x,
                                            float* part, int H, int P) {
    int p = blockIdx.x, h = threadIdx.x;
    if (h >= H) return;
    int n = n_ptr[0];
    int C = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P);
    int start = p * C, end = start + C;
    float s = 0.f;
#pragma unroll 1
    for (int j = start; j < end; j++) s += x[(long long)j * H + h];
    part[(long long)p * H + h] = s;
}
