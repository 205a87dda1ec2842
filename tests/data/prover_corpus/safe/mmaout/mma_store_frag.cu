#include <cuda_fp16.h>
__device__ __forceinline__ unsigned ld2(const __half* p, int r, int c, int R, int K) {
    // two halves (c, c+1) of row r, zero outside the matrix (K is even)
    return r < R ? *(const unsigned*)(p + (size_t)r * K + c) : 0u;
}
extern "C" __global__ void mma_store_frag(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
                                  int M, int N, int K) {
    // one warp per 16 x 8 tile of C
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    int m0 = blockIdx.y * 16, n0 = blockIdx.x * 8;
    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
    for (int k = 0; k < K; k += 16) {
        unsigned a0 = ld2(A, m0 + g, k + 2 * t, M, K), a1 = ld2(A, m0 + g + 8, k + 2 * t, M, K);
        unsigned a2 = ld2(A, m0 + g, k + 2 * t + 8, M, K), a3 = ld2(A, m0 + g + 8, k + 2 * t + 8, M, K);
        unsigned b0 = ld2(B, n0 + g, k + 2 * t, N, K), b1 = ld2(B, n0 + g, k + 2 * t + 8, N, K);
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};" : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    int r = m0 + g, col = n0 + 2 * t;
    if (r < M && col < N) C[(size_t)r * N + col] = c0;
    if (r < M && col + 1 < N) C[(size_t)r * N + col + 1] = c1;
    if (r + 8 < M && col < N) C[(size_t)(r + 8) * N + col] = c2;
    if (r + 8 < M && col + 1 < N) C[(size_t)(r + 8) * N + col + 1] = c3;
}
