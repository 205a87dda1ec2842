// Safe GEMM, shared-memory tiles and fp32 FMA (entries gemm_tiled_bf16, gemm_tiled_f16):
// Y[t, n] = sum_k X[t, k] W[n, k] with fp32 products and sums, one rounding to DT.
// Block (bx, by) of 256 threads owns the 64 x 64 tile of Y at rows t0 = 64 * by, columns n0 = 64 * bx.
// Per step of 32 along K, thread i loads the 16-byte vector (row i / 4, k + 8 * (i % 4)) of the X tile
// and the same of the W tile (zeros past T, N or K: K % 8 == 0, so a vector is wholly in or out) and
// stores both, unconverted, to shared memory (one 16-byte store each: few accesses for the prover);
// a barrier; then thread (ty, tx) = (i / 16, i % 16) reads its 4 rows of X and 4 rows of W 8 k at a time
// and accumulates its 4 x 4 outputs (rows ty + 16 r, columns tx + 16 c); a barrier before the next step
// overwrites the tiles. Each thread writes only its own outputs (those inside T x N);
// X and W are only read. Every thread reaches every barrier (the K loop bound is the same for all).
#include "kreg_own.cuh"

constexpr int BM = 64, BN = 64, BK = 32;   // block tile: rows of Y (T), columns (N), step along K
constexpr int LD = BK + 8;                 // shared row length in elements (16-byte padding: fewer bank conflicts)

template <class T>
__device__ __forceinline__ void gemm_tiled(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                           int Tn, int N, int K) {
    __shared__ __align__(16) T xs[BM][LD];
    __shared__ __align__(16) T ws[BN][LD];
    int i = threadIdx.x;
    int tx = i % 16, ty = i / 16;
    long long t0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
    int lr = i / 4, lk = 8 * (i % 4);          // the row and k offset of the vector this thread loads
    float acc[4][4];
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int c = 0; c < 4; c++) acc[r][c] = 0.f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        int k = k0 + lk;
        uint4 xv = make_uint4(0, 0, 0, 0), wv = make_uint4(0, 0, 0, 0);
        if (t0 + lr < Tn && k < K) xv = kreg::load_raw<T>(X + (t0 + lr) * K + k);
        if (n0 + lr < N && k < K) wv = kreg::load_raw<T>(W + (n0 + lr) * K + k);
        *reinterpret_cast<uint4*>(&xs[lr][lk]) = xv;
        *reinterpret_cast<uint4*>(&ws[lr][lk]) = wv;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            kreg::F8 a[4], b[4];
#pragma unroll
            for (int r = 0; r < 4; r++) a[r] = kreg::unpack8<T>(*reinterpret_cast<const uint4*>(&xs[ty + 16 * r][kk]));
#pragma unroll
            for (int c = 0; c < 4; c++) b[c] = kreg::unpack8<T>(*reinterpret_cast<const uint4*>(&ws[tx + 16 * c][kk]));
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int r = 0; r < 4; r++)
#pragma unroll
                    for (int c = 0; c < 4; c++) acc[r][c] = fmaf(a[r].v[j], b[c].v[j], acc[r][c]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
        long long t = t0 + ty + 16 * r;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            long long n = n0 + tx + 16 * c;
            if (t < Tn && n < N) Y[t * N + n] = kreg::Cvt<T>::from(acc[r][c]);
        }
    }
}

extern "C" __global__ void gemm_tiled_bf16(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
                                           __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_tiled(X, W, Y, T, N, K);
}

extern "C" __global__ void gemm_tiled_f16(const __half* __restrict__ X, const __half* __restrict__ W,
                                          __half* __restrict__ Y, int T, int N, int K) {
    gemm_tiled(X, W, Y, T, N, K);
}
