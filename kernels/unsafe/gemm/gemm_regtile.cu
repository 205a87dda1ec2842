// Unsafe GEMM, fp32 FMA with 8 x 8 register tiles (entries gemm_regtile_bf16, gemm_regtile_f16):
// Y = X W^T with fp32 products and sums. Block of 256 threads owns a 128 x 128 tile of Y; per step of 16
// along K every thread loads one 16-byte vector of X and one of W (zeros past T, N, K), stores them
// k-major as floats; thread (ty, tx) then reads its 8 rows and 8 columns as float4 pairs from shared
// memory (vector casts: not in the safe discipline) and accumulates its 64 outputs.
#include "kreg_own.cuh"

constexpr int BM = 128, BN = 128, BK = 16;

template <class T>
__device__ __forceinline__ void gemm_regtile(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                             int Tn, int N, int K) {
    __shared__ __align__(16) float xs[BK][BM];
    __shared__ __align__(16) float ws[BK][BN];
    int i = threadIdx.x, tx = i % 16, ty = i / 16;
    long long t0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
    int lr = i / 2, lk = 8 * (i % 2);
    float acc[8][8] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        int k = k0 + lk;
        kreg::F8 xv = {}, wv = {};
        if (t0 + lr < Tn && k < K) xv = kreg::load8<T>(X + (t0 + lr) * K + k);
        if (n0 + lr < N && k < K) wv = kreg::load8<T>(W + (n0 + lr) * K + k);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            xs[lk + j][lr] = xv.v[j];
            ws[lk + j][lr] = wv.v[j];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float4 a0 = *reinterpret_cast<const float4*>(&xs[kk][4 * ty]);
            float4 a1 = *reinterpret_cast<const float4*>(&xs[kk][64 + 4 * ty]);
            float4 b0 = *reinterpret_cast<const float4*>(&ws[kk][4 * tx]);
            float4 b1 = *reinterpret_cast<const float4*>(&ws[kk][64 + 4 * tx]);
            float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int r = 0; r < 8; r++)
#pragma unroll
                for (int c = 0; c < 8; c++) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 8; r++) {
        long long t = t0 + (r < 4 ? 4 * ty + r : 64 + 4 * ty + r - 4);
#pragma unroll
        for (int c = 0; c < 8; c++) {
            long long n = n0 + (c < 4 ? 4 * tx + c : 64 + 4 * tx + c - 4);
            if (t < Tn && n < N) Y[t * N + n] = kreg::Cvt<T>::from(acc[r][c]);
        }
    }
}

extern "C" __global__ void gemm_regtile_bf16(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
                                             __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_regtile(X, W, Y, T, N, K);
}

extern "C" __global__ void gemm_regtile_f16(const __half* __restrict__ X, const __half* __restrict__ W,
                                            __half* __restrict__ Y, int T, int N, int K) {
    gemm_regtile(X, W, Y, T, N, K);
}
