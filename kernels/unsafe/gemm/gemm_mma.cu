// Tensor-core GEMM in the safe discipline, registered unsafe until its proof closes in budget (entries
// gemm_mma_bf16, gemm_mma_f16): Y = X W^T, fp32 accumulation in
// mma.sync.m16n8k16, one rounding to DT. Block (bx, by) of 8 warps owns the 128 x 128 tile of Y at rows
// t0 = 128 * by, columns n0 = 128 * bx; warp w owns the 64 x 32 sub-tile at rows 64 * (w / 4), columns
// 32 * (w % 4) of it (4 x 4 mma tiles of 16 x 8, 64 fp32 accumulators per thread).
// K goes in steps of 16 through two shared stages (double buffering): step s's tiles of X and W
// (128 rows x 16 k each, rows padded to 24 elements: conflict-free ldmatrix) are copied by cp.async,
// thread i copying the 16-byte vector i of each (zero-filled past T, N or K, from a clamped
// in-bounds address: row 0 for a row past T / N, the offset clamped to K - 8), one commit group per step;
// steps go in pairs (stage 0, stage 1), past K to an even count (the extra step's tiles are zeros). Each step: cp.async.wait_all (this thread's copies of
// step s landed), __syncthreads (everyone's landed, and everyone finished reading the other stage in
// step s - 1), then issue the copies of step s + 1 into the other stage (past the last step too, all
// zero-filled: the same copies every iteration), then ldmatrix + mma on stage s.
// The epilogue stages the block's Y tile in shared memory (rounded to DT) and writes it out a row
// segment per thread. Each element of Y is written by one thread (inside T x N); X and W are only read;
// every thread reaches every barrier (the step count is the same for all).
#include "kreg_own.cuh"
#include "kreg_mma.cuh"

constexpr int BM = 128, BN = 128, BK = 16;
constexpr int LD = BK + 8;                 // shared row length in elements (48 bytes: 8 rows hit 8 distinct 16-byte bank groups)
constexpr int VPR = BK / 8;                // 16-byte vectors per tile row
constexpr int HV = BM * VPR / 256;         // vectors of each tile per thread
constexpr int STAGES_BYTES = 2 * (BM + BN) * LD * 2, YS_BYTES = BM * (BN + 8) * 2;
constexpr int SMEM_BYTES = STAGES_BYTES > YS_BYTES ? STAGES_BYTES : YS_BYTES;
constexpr int WM = 64, WN = 32;            // warp tile
constexpr int MT = WM / 16, NT = WN / 8;   // mma tiles per warp: 4 x 4

// The rows this thread copies (vectors v = threadIdx.x + 256 h, row v / VPR, k offset 8 (v % VPR)): a pointer
// to the row, or to row 0 for a row past T or N (which copies nothing but keeps a valid address).
template <class T> struct Rows {
    const T* x[HV];
    const T* w[HV];
    bool xin[HV], win[HV];
};

template <class T>
__device__ __forceinline__ Rows<T> rows_of(const T* __restrict__ X, const T* __restrict__ W, long long t0, long long n0,
                                           int Tn, int N, int K) {
    Rows<T> r;
#pragma unroll
    for (int h = 0; h < HV; h++) {
        long long row = (threadIdx.x + 256 * h) / VPR;
        r.xin[h] = t0 + row < Tn;
        r.win[h] = n0 + row < N;
        r.x[h] = X + (r.xin[h] ? (t0 + row) * K : 0);
        r.w[h] = W + (r.win[h] ? (n0 + row) * K : 0);
    }
    return r;
}

// The copies of the step at k0 into one stage, then one commit group. The k offset is clamped too
// (min(k, K - 8): not an affine function of the step, so the compiler keeps it as written and the
// address stays a plain row pointer + clamped offset for the prover); past K nothing is copied.
template <class T>
__device__ __forceinline__ void load_stage(T (*xs)[LD], T (*ws)[LD], const Rows<T>& rows, int k0, int K) {
#pragma unroll
    for (int h = 0; h < HV; h++) {
        int v = threadIdx.x + 256 * h, r = v / VPR, k = k0 + 8 * (v % VPR);
        bool kin = k < K;
        int kc = min(k, K - 8);
        cp_async16(&xs[r][8 * (v % VPR)], rows.x[h] + kc, kin && rows.xin[h]);
        cp_async16(&ws[r][8 * (v % VPR)], rows.w[h] + kc, kin && rows.win[h]);
    }
    asm volatile("cp.async.commit_group;");
}

// One stage's BK along K for the warp's 4 x 4 mma tiles.
template <class T>
__device__ __forceinline__ void mma_step(float (&acc)[MT][NT][4], T (*xa)[LD], T (*wa)[LD], int wm, int wn, int lane) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
        unsigned a[MT][4], b[NT][2];
#pragma unroll
        for (int i = 0; i < MT; i++)      // rows 0-15 (lanes 0-15) at k, then at k + 8 (lanes 16-31)
            ldmatrix_x4(a[i], &xa[wm + 16 * i + (lane & 15)][kk + 8 * (lane >> 4)]);
#pragma unroll
        for (int j = 0; j < NT; j += 2) { // two n8 tiles: n rows 0-7 at k, k + 8, then rows 8-15
            unsigned r[4];
            ldmatrix_x4(r, &wa[wn + 8 * j + (lane & 7) + 8 * (lane >> 4)][kk + 8 * ((lane >> 3) & 1)]);
            b[j][0] = r[0]; b[j][1] = r[1]; b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) Mma<T>::run(acc[i][j], a[i], b[j]);
    }
}

template <class T>
__device__ __forceinline__ void gemm_mma(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                         int Tn, int N, int K) {
    __shared__ __align__(16) T smem[SMEM_BYTES / 2];    // two stages of X and W tiles; then the Y tile
    T (*xs)[BM][LD] = reinterpret_cast<T (*)[BM][LD]>(smem);
    T (*ws)[BN][LD] = reinterpret_cast<T (*)[BN][LD]>(smem + 2 * BM * LD);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int wm = WM * (warp / 4), wn = WN * (warp % 4);
    long long t0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.f;
    // Steps go in pairs, stage 0 then stage 1 (constant stage addresses, simple to prove); the copies
    // are issued unconditionally, past K too (zero-filled: a step past the last one adds exact zeros),
    // so that every iteration issues the same copies.
    Rows<T> rows = rows_of(X, W, t0, n0, Tn, N, K);
    load_stage(xs[0], ws[0], rows, 0, K);
#pragma unroll 1
    for (int k0 = 0; k0 < K; k0 += 2 * BK) {
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
        load_stage(xs[1], ws[1], rows, k0 + BK, K);
        mma_step(acc, xs[0], ws[0], wm, wn, lane);
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
        load_stage(xs[0], ws[0], rows, k0 + 2 * BK, K);
        mma_step(acc, xs[1], ws[1], wm, wn, lane);
    }
    // Epilogue through shared memory. Accumulator c of tile (i, j) is row g (c < 2) or g + 8, column
    // 2 tq + (c & 1) of the tile, g = lane / 4, tq = lane % 4. The shared Y tile holds words (two columns)
    // with the columns of a warp's 32 permuted so that a thread's four words of one row (tiles j = 0..3)
    // are adjacent: word wn / 2 + 4 tq + j holds columns wn + 8 j + 2 tq, + 1. One 16-byte store each.
    asm volatile("cp.async.wait_all;" ::: "memory");     // the zero-filled copies of the step past the last
    __syncthreads();                                      // everyone is done with the stages
    unsigned (*ysw)[(BN + 8) / 2] = reinterpret_cast<unsigned (*)[(BN + 8) / 2]>(smem);
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            *reinterpret_cast<uint4*>(&ysw[wm + 16 * i + (lane >> 2) + 8 * h][wn / 2 + 4 * (lane & 3)]) =
                make_uint4(kreg::Cvt<T>::pack(acc[i][0][2 * h], acc[i][0][2 * h + 1]),
                           kreg::Cvt<T>::pack(acc[i][1][2 * h], acc[i][1][2 * h + 1]),
                           kreg::Cvt<T>::pack(acc[i][2][2 * h], acc[i][2][2 * h + 1]),
                           kreg::Cvt<T>::pack(acc[i][3][2 * h], acc[i][3][2 * h + 1]));
    __syncthreads();
    // then 8 consecutive columns c8.. of a row per thread and round (the four words of tile j = c8 % 32 / 8
    // of warp column wn = c8 - c8 % 32): one 16-byte store where N % 8 == 0 (rows 16-byte aligned), else
    // one element at a time
#pragma unroll 1
    for (int e = threadIdx.x; e < BM * BN / 8; e += 256) {
        int r = e / (BN / 8), c8 = 8 * (e % (BN / 8));
        int base = (c8 - c8 % 32) / 2 + c8 % 32 / 8;
        uint4 v = make_uint4(ysw[r][base], ysw[r][base + 4], ysw[r][base + 8], ysw[r][base + 12]);
        long long t = t0 + r, n = n0 + c8;
        if (t < Tn) {
            if (N % 8 == 0) {
                if (n + 8 <= N) *reinterpret_cast<uint4*>(Y + t * N + n) = v;    // = n < N here
            } else {
#pragma unroll 1
                for (int j = 0; j < 8 && n + j < N; j++) {
                    unsigned w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
                    unsigned short bits = (unsigned short)(w >> (16 * (j & 1)));
                    Y[t * N + n + j] = *reinterpret_cast<const T*>(&bits);
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) gemm_mma_bf16(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_mma(X, W, Y, T, N, K);
}

extern "C" __global__ void __launch_bounds__(256) gemm_mma_f16(const __half* __restrict__ X,
        const __half* __restrict__ W, __half* __restrict__ Y, int T, int N, int K) {
    gemm_mma(X, W, Y, T, N, K);
}
