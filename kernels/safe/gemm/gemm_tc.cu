// Safe tensor-core GEMM (entries gemm_tc_bf16 / gemm_tc_f16, then gemm_tc_ragged_bf16 / _f16): Y = X W^T,
// fp32 accumulation, one rounding to DT. Written for a proof that closes for all dims: every global
// address is a row pointer plus a column under a plain guard (row < T or N, k < K, K % 8 == 0), no
// cp.async (but see KREG_ASYNC), one shared buffer, 16-byte stores of Y only (a fallback loop of element
// stores in the same kernel drowned the prover: it gets its own launch).
// gemm_tc (N % 8 == 0; it returns at once otherwise): block (bx, by) of 8 warps owns the 128 x 128 tile
// of Y at rows t0 = 128 * bx (T tiles fastest: the blocks in flight share W tiles), columns
// n0 = 128 * by; warp w the 64 x 32 sub-tile at rows 64 * (w / 4), columns 32 * (w % 4) (4 x 4
// mma.sync.m16n8k16 tiles, 64 fp32 accumulators a thread; KREG_BN / KREG_WN change the block and warp
// tile widths). K in steps of BK: the step's X and W tiles
// (128 rows x BK, rows padded by 8 elements: conflict-free ldmatrix) are held in registers (HV 16-byte
// vectors of each per thread, zeros past T, N or K), stored to shared memory, a barrier; the next
// step's vectors are loaded from global memory into the registers while the tensor cores work on this
// one; a barrier before the next store. With KREG_DB=1, two stages (four shared arrays) and steps in
// pairs: a step's mma reads one stage while the next step's vectors go to the other, one barrier a step.
// With KREG_ASYNC=1, the two stages in dynamic shared memory are filled by cp.async (no register
// staging): a step waits for its own copies and a barrier, issues the next step's copies into the other
// stage, then computes (proven for all dims at 128 x 128 / 64 x 32 / BK 64, but for about 47 s of solver
// work against the 30 s variant budget: bench/results/gemm_tca_prove_2026-11-24.txt).
// gemm_tc_ragged (N % 8 != 0; its blocks return at once otherwise): 64 x 64 tiles of fp32 FMA (below).
// Each element of Y is written by one thread of one of the two launches; X and W are only read; every
// thread reaches every barrier.
#include "kreg_own.cuh"
#include "kreg_mma.cuh"

#ifndef KREG_BK
#define KREG_BK 32
#endif
#ifndef KREG_BN
#define KREG_BN 128
#endif
#ifndef KREG_WN
#define KREG_WN 32
#endif
#ifndef KREG_DB
#define KREG_DB 0      // 1: two shared stages, one barrier a step (steps in pairs: a stage index the
                       // prover would have to track across iterations lost the proof)
#endif
#ifndef KREG_ASYNC
#define KREG_ASYNC 0   // 1: two stages in dynamic shared memory (launch shared = 4 (BM + BN) LD bytes) filled by
                       // cp.async, steps in pairs, each step's copies in flight during the previous step's mma
                       // (four static arrays instead: the race proof no longer closed)
#endif
constexpr int BM = 128, BN = KREG_BN, BK = KREG_BK;
constexpr int WM = 64, WN = KREG_WN, MT = 4, NT = WN / 8;   // warp tile: 4 x NT mma tiles
constexpr int WARPS_N = BN / WN, THREADS = 64 * WARPS_N;    // warps 2 (m) x WARPS_N (n)
#ifndef KREG_MINB
#define KREG_MINB 1    // __launch_bounds__' minimum blocks per SM of the gemm_tc entries
#endif
#if KREG_MINB > 1
#define KREG_TC_BOUNDS __launch_bounds__(THREADS, KREG_MINB)
#else
#define KREG_TC_BOUNDS __launch_bounds__(THREADS)
#endif
#ifndef KREG_PAD
#define KREG_PAD 8
#endif
constexpr int LD = BK + KREG_PAD;          // padded shared row (elements): 8 rows at one k hit 8 bank groups
constexpr int VPR = BK / 8;                // 16-byte vectors per tile row
constexpr int XV = BM * VPR / THREADS, WV = BN * VPR / THREADS;   // vectors of each tile per thread
static_assert(NT % 4 == 0 && XV >= 1 && WV >= 1 && THREADS % VPR == 0, "warp tile columns in 32s; every thread copies");

// One 16-byte store (as one instruction: NVRTC splits a uint4 store it cannot prove 16-byte aligned into four
// 4-byte stores, which is four times the instructions and, for the prover, sixteen times the pairs).
template <class T> __device__ __forceinline__ void st_global_v4(T* p, const unsigned (&u)[4]) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3])
                 : "memory");
}

// This thread's vectors of the X and W tiles at step k0 (zeros past T, N or K).
template <class T>
__device__ __forceinline__ void load_step(uint4 (&xv)[XV], uint4 (&wv)[WV], const T* __restrict__ X,
                                          const T* __restrict__ W, long long t0, long long n0, int Tn, int N,
                                          int K, int k0) {
#pragma unroll
    for (int h = 0; h < XV; h++) {      // rows threadIdx.x / VPR + (THREADS / VPR) h, k offset 8 (threadIdx.x % VPR)
        int r = threadIdx.x / VPR + THREADS / VPR * h, k = k0 + 8 * (threadIdx.x % VPR);
        xv[h] = make_uint4(0, 0, 0, 0);
        if (t0 + r < Tn && k < K) xv[h] = kreg::load_raw<T>(X + (t0 + r) * K + k);
    }
#pragma unroll
    for (int h = 0; h < WV; h++) {
        int r = threadIdx.x / VPR + THREADS / VPR * h, k = k0 + 8 * (threadIdx.x % VPR);
        wv[h] = make_uint4(0, 0, 0, 0);
        if (n0 + r < N && k < K) wv[h] = kreg::load_raw<T>(W + (n0 + r) * K + k);
    }
}

// This thread's vectors into a stage's X and W tiles.
template <class T>
__device__ __forceinline__ void store_step(T (*xs)[LD], T (*ws)[LD], const uint4 (&xv)[XV], const uint4 (&wv)[WV]) {
#pragma unroll
    for (int h = 0; h < XV; h++)
        *reinterpret_cast<uint4*>(&xs[threadIdx.x / VPR + THREADS / VPR * h][8 * (threadIdx.x % VPR)]) = xv[h];
#pragma unroll
    for (int h = 0; h < WV; h++)
        *reinterpret_cast<uint4*>(&ws[threadIdx.x / VPR + THREADS / VPR * h][8 * (threadIdx.x % VPR)]) = wv[h];
}

// cp.async of this thread's vectors of the X and W tiles at step k0 into a stage (zero-filled past T, N or
// K, with X / W itself as the unread source there), then one commit group.
template <class T>
__device__ __forceinline__ void copy_step(T (*xs)[LD], T (*ws)[LD], const T* __restrict__ X, const T* __restrict__ W,
                                          long long t0, long long n0, int Tn, int N, int K, int k0) {
#pragma unroll
    for (int h = 0; h < XV; h++) {
        int r = threadIdx.x / VPR + THREADS / VPR * h, k = k0 + 8 * (threadIdx.x % VPR);
        bool ok = t0 + r < Tn && k < K;
        cp_async16(&xs[r][8 * (threadIdx.x % VPR)], ok ? X + (t0 + r) * K + k : X, ok);
    }
#pragma unroll
    for (int h = 0; h < WV; h++) {
        int r = threadIdx.x / VPR + THREADS / VPR * h, k = k0 + 8 * (threadIdx.x % VPR);
        bool ok = n0 + r < N && k < K;
        cp_async16(&ws[r][8 * (threadIdx.x % VPR)], ok ? W + (n0 + r) * K + k : W, ok);
    }
    asm volatile("cp.async.commit_group;");
}

// One step's BK along K for the warp's MT x NT mma tiles.
template <class T>
__device__ __forceinline__ void mma_step(float (&acc)[MT][NT][4], T (*xs)[LD], T (*ws)[LD], int wm, int wn, int lane) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
        unsigned a[MT][4], b[NT][2];
#pragma unroll
        for (int i = 0; i < MT; i++)      // rows 0-15 (lanes 0-15) at k, then at k + 8 (lanes 16-31)
            ldmatrix_x4(a[i], &xs[wm + 16 * i + (lane & 15)][kk + 8 * (lane >> 4)]);
#pragma unroll
        for (int j = 0; j < NT; j += 2) { // two n8 tiles: n rows 0-7 at k, k + 8, then rows 8-15
            unsigned r[4];
            ldmatrix_x4(r, &ws[wn + 8 * j + (lane & 7) + 8 * (lane >> 4)][kk + 8 * ((lane >> 3) & 1)]);
            b[j][0] = r[0]; b[j][1] = r[1]; b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) Mma<T>::run(acc[i][j], a[i], b[j]);
    }
}

template <class T>
__device__ __forceinline__ void gemm_tc(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                        int Tn, int N, int K) {
#if KREG_ASYNC
    extern __shared__ __align__(16) unsigned char gemm_tc_stages[];   // X0, W0, X1, W1 tiles
    T (*xs0)[LD] = reinterpret_cast<T (*)[LD]>(gemm_tc_stages);
    T (*ws0)[LD] = xs0 + BM;
    T (*xs1)[LD] = ws0 + BN;
    T (*ws1)[LD] = xs1 + BM;
#elif KREG_DB
    __shared__ __align__(16) T xs0[BM][LD];              // two stages as four arrays: one barrier a step
    __shared__ __align__(16) T ws0[BN][LD];
    __shared__ __align__(16) T xs1[BM][LD];
    __shared__ __align__(16) T ws1[BN][LD];
#else
    __shared__ __align__(16) T xs[BM][LD];
    __shared__ __align__(16) T ws[BN][LD];
#endif
    if (N % 8 != 0) return;                              // gemm_tc_ragged's case (uniform: before any barrier)
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int wm = WM * (warp / WARPS_N), wn = WN * (warp % WARPS_N);
    long long t0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.f;
#if KREG_ASYNC
    // steps in pairs, stage 0 then stage 1; a step waits for its own copies, a barrier (everyone's landed,
    // and everyone is done with the other stage), then issues the next step's copies into the other stage
    // and computes; a pair past K copies nothing (zero-filled) and computes on zeros
    copy_step(xs0, ws0, X, W, t0, n0, Tn, N, K, 0);
    for (int k0 = 0; k0 < K; k0 += 2 * BK) {
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
        copy_step(xs1, ws1, X, W, t0, n0, Tn, N, K, k0 + BK);
        mma_step(acc, xs0, ws0, wm, wn, lane);
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
        copy_step(xs0, ws0, X, W, t0, n0, Tn, N, K, k0 + 2 * BK);
        mma_step(acc, xs1, ws1, wm, wn, lane);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");      // the last (zero-filled) copies
#else
    uint4 xv[XV], wv[WV];
    load_step(xv, wv, X, W, t0, n0, Tn, N, K, 0);
#if KREG_DB
    // steps in pairs, stage 0 then stage 1 (static: no stage index for the prover to track); each step
    // loads the next step's tiles during its mma and stores them to the other stage, which nobody reads
    // in this interval; a pair past K computes on zero tiles
    store_step(xs0, ws0, xv, wv);
    __syncthreads();
    for (int k0 = 0; k0 < K; k0 += 2 * BK) {
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + BK);
        mma_step(acc, xs0, ws0, wm, wn, lane);
        store_step(xs1, ws1, xv, wv);
        __syncthreads();
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + 2 * BK);
        mma_step(acc, xs1, ws1, wm, wn, lane);
        store_step(xs0, ws0, xv, wv);
        __syncthreads();
    }
#else
    for (int k0 = 0; k0 < K; k0 += BK) {
        store_step(xs, ws, xv, wv);
        __syncthreads();
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + BK);     // the next step's, in flight during the mma
        mma_step(acc, xs, ws, wm, wn, lane);
        __syncthreads();
    }
#endif
#endif
    // Epilogue from registers. Accumulator c of tile (i, j) is row g (c < 2) or g + 8, column 2 tq + (c & 1)
    // of the tile; g = lane / 4, tq = lane % 4: the four lanes of a quad hold a row's 32 columns as 16 words
    // per group of 4 tiles
    // (lane tq, tile j: columns 8 j + 2 tq, + 1). A 4 x 4 transpose of words within the quad (round r:
    // lane tq sends its word of tile tq ^ r to lane tq ^ r) leaves lane tq the 8 consecutive columns of
    // tile tq: one 16-byte store where they are inside N (all 8 or none: N % 8 == 0).
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
        for (int jg = 0; jg < NT / 4; jg++) {      // tiles 4 jg .. 4 jg + 3: columns 32 jg .. of the warp's
            unsigned w[4], u[4] = {0, 0, 0, 0};
#pragma unroll
            for (int j = 0; j < 4; j++) w[j] = kreg::Cvt<T>::pack(acc[i][4 * jg + j][2 * h], acc[i][4 * jg + j][2 * h + 1]);
#pragma unroll
            for (int r = 0; r < 4; r++) {
                int m = tq ^ r;
                unsigned mine = m == 0 ? w[0] : m == 1 ? w[1] : m == 2 ? w[2] : w[3];
                unsigned got = r ? __shfl_xor_sync(0xffffffffu, mine, r) : mine;
                u[0] = m == 0 ? got : u[0];
                u[1] = m == 1 ? got : u[1];
                u[2] = m == 2 ? got : u[2];
                u[3] = m == 3 ? got : u[3];
            }
            long long t = t0 + wm + 16 * i + g + 8 * h, n = n0 + wn + 32 * jg + 8 * tq;
            if (t < Tn) {
                if (n + 8 <= N) {
                    st_global_v4(Y + t * N + n, u);
                }
            }
        }
}

extern "C" __global__ void KREG_TC_BOUNDS gemm_tc_bf16(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_tc(X, W, Y, T, N, K);
}

extern "C" __global__ void KREG_TC_BOUNDS gemm_tc_f16(const __half* __restrict__ X,
        const __half* __restrict__ W, __half* __restrict__ Y, int T, int N, int K) {
    gemm_tc(X, W, Y, T, N, K);
}

// The ragged-N fallback, gemm_tiled's scheme with 512 threads (8 outputs each: fewer stores to prove):
// block (bx, by) owns the 64 x 64 tile of Y at rows t0 = 64 by, columns n0 = 64 bx; per step of 32 along K,
// threads 0-255 load the X tile's 16-byte vector (row (i % 256) / 4, k + 8 (i % 4)), threads 256-511 the
// W tile's (zeros past T, N or K), a barrier, then thread (ty, tx) = (i / 16, i % 16) accumulates rows
// ty + 32 r, columns tx + 16 c in fp32 FMA; a barrier before the next step.
constexpr int RM = 64, RN = 64, RK = 32, RLD = RK + 8;

template <class T>
__device__ __forceinline__ void gemm_ragged(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                            int Tn, int N, int K) {
    if (N % 8 == 0) return;                  // gemm_tc's case (uniform: before any barrier)
    __shared__ __align__(16) T xs[RM][RLD];
    __shared__ __align__(16) T ws[RN][RLD];
    int i = threadIdx.x;
    int tx = i % 16, ty = i / 16;
    long long t0 = (long long)blockIdx.y * RM, n0 = (long long)blockIdx.x * RN;
    int lr = i % 256 / 4, lk = 8 * (i % 4);  // the row and k offset of the vector this thread loads
    float acc[2][4];
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int c = 0; c < 4; c++) acc[r][c] = 0.f;
    for (int k0 = 0; k0 < K; k0 += RK) {
        int k = k0 + lk;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (i < 256) {
            if (t0 + lr < Tn && k < K) v = kreg::load_raw<T>(X + (t0 + lr) * K + k);
            *reinterpret_cast<uint4*>(&xs[lr][lk]) = v;
        } else {
            if (n0 + lr < N && k < K) v = kreg::load_raw<T>(W + (n0 + lr) * K + k);
            *reinterpret_cast<uint4*>(&ws[lr][lk]) = v;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < RK; kk += 8) {
            kreg::F8 a[2], b[4];
#pragma unroll
            for (int r = 0; r < 2; r++) a[r] = kreg::unpack8<T>(*reinterpret_cast<const uint4*>(&xs[ty + 32 * r][kk]));
#pragma unroll
            for (int c = 0; c < 4; c++) b[c] = kreg::unpack8<T>(*reinterpret_cast<const uint4*>(&ws[tx + 16 * c][kk]));
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int c = 0; c < 4; c++) acc[r][c] = fmaf(a[r].v[j], b[c].v[j], acc[r][c]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        long long t = t0 + ty + 32 * r;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            long long n = n0 + tx + 16 * c;
            if (t < Tn && n < N) Y[t * N + n] = kreg::Cvt<T>::from(acc[r][c]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(512) gemm_tc_ragged_bf16(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_ragged(X, W, Y, T, N, K);
}

extern "C" __global__ void __launch_bounds__(512) gemm_tc_ragged_f16(const __half* __restrict__ X,
        const __half* __restrict__ W, __half* __restrict__ Y, int T, int N, int K) {
    gemm_ragged(X, W, Y, T, N, K);
}
