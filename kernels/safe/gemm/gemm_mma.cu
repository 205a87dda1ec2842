// Safe tensor-core GEMM (entries gemm_mma_bf16, gemm_mma_f16): Y = X W^T, fp32 accumulation in
// mma.sync.m16n8k16, one rounding to DT. Block (bx, by) of 8 warps owns the 128 x 128 tile of Y at rows
// t0 = 128 * by, columns n0 = 128 * bx; warp w owns the 64 x 32 sub-tile at rows 64 * (w / 4), columns
// 32 * (w % 4) of it (4 x 4 mma tiles of 16 x 8, 64 fp32 accumulators per thread).
// K goes in steps of 32 through two shared stages (double buffering): step s's tiles of X and W
// (128 rows x 32 k each, rows padded to 40 elements: conflict-free ldmatrix) are copied by cp.async,
// thread i copying the 16-byte vectors i and i + 256 of each (zero-filled past T, N or K, from a clamped
// in-bounds address: the row clamped to T - 1 / N - 1, the offset to K - 8), one commit group per step. Each step: cp.async.wait_all (this thread's copies of
// step s landed), __syncthreads (everyone's landed, and everyone finished reading the other stage in
// step s - 1), then issue the copies of step s + 1 into the other stage (past the last step too, all
// zero-filled: the same copies every iteration), then ldmatrix + mma on stage s.
// The epilogue stages the block's Y tile in shared memory (rounded to DT) and writes it out a row
// segment per thread. Each element of Y is written by one thread (inside T x N); X and W are only read;
// every thread reaches every barrier (the step count is the same for all).
#include "kreg_own.cuh"

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int LD = BK + 8;                 // shared row length in elements (80 bytes: 8 rows hit 8 distinct 16-byte bank groups)
constexpr int WM = 64, WN = 32;            // warp tile
constexpr int MT = WM / 16, NT = WN / 8;   // mma tiles per warp: 4 x 4

template <class T> struct Mma;
template <> struct Mma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float* d, const unsigned* a, const unsigned* b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
template <> struct Mma<__half> {
    static __device__ __forceinline__ void run(float* d, const unsigned* a, const unsigned* b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const void* smem) {
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// 16 bytes global -> shared, asynchronously; bytes zero-filled when !valid (then src is not read).
__device__ __forceinline__ void cp_async16(void* smem, const void* src, bool valid) {
    unsigned d = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src), "r"(valid ? 16 : 0));
}

// The rows this thread copies (vectors v = threadIdx.x + 256 h, row v / 4, k offset 8 (v % 4)): a pointer
// to the row clamped inside the matrix (a row past T or N copies nothing but keeps a valid address).
template <class T> struct Rows {
    const T* x[2];
    const T* w[2];
    bool xin[2], win[2];
};

template <class T>
__device__ __forceinline__ Rows<T> rows_of(const T* __restrict__ X, const T* __restrict__ W, long long t0, long long n0,
                                           int Tn, int N, int K) {
    Rows<T> r;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        long long row = (threadIdx.x + 256 * h) / 4;
        r.xin[h] = t0 + row < Tn;
        r.win[h] = n0 + row < N;
        r.x[h] = X + min(t0 + row, (long long)Tn - 1) * K;
        r.w[h] = W + min(n0 + row, (long long)N - 1) * K;
    }
    return r;
}

// The copies of the step at k0 into one stage, then one commit group. The k offset is clamped too
// (min(k, K - 8): not an affine function of the step, so the compiler keeps it as written and the
// address stays a plain row pointer + clamped offset for the prover); past K nothing is copied.
template <class T>
__device__ __forceinline__ void load_stage(T (*xs)[LD], T (*ws)[LD], const Rows<T>& rows, int k0, int K) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int v = threadIdx.x + 256 * h, r = v / 4, k = k0 + 8 * (v % 4);
        bool kin = k < K;
        int kc = min(k, K - 8);
        cp_async16(&xs[r][8 * (v % 4)], rows.x[h] + kc, kin && rows.xin[h]);
        cp_async16(&ws[r][8 * (v % 4)], rows.w[h] + kc, kin && rows.win[h]);
    }
    asm volatile("cp.async.commit_group;");
}

template <class T>
__device__ __forceinline__ void gemm_mma(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                         int Tn, int N, int K) {
    __shared__ __align__(16) T smem[2 * (BM + BN) * LD];  // two stages of X and W tiles; then the Y tile
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
    int steps = (K + BK - 1) / BK;
    Rows<T> rows = rows_of(X, W, t0, n0, Tn, N, K);
    load_stage(xs[0], ws[0], rows, 0, K);
    for (int s = 0; s < steps; s++) {
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
        // unconditional (past the last step: all zero-filled, read by no one), so that every iteration
        // issues the same copies
        load_stage(xs[(s + 1) & 1], ws[(s + 1) & 1], rows, (s + 1) * BK, K);
        T (*xa)[LD] = xs[s & 1];
        T (*wa)[LD] = ws[s & 1];
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
    // Epilogue through shared memory: accumulator c of tile (i, j) is row g (c < 2) or g + 8, column
    // 2 (lane % 4) + (c & 1), g = lane / 4; each pair (c, c + 1) goes to the shared tile ys as one word.
    asm volatile("cp.async.wait_all;" ::: "memory");     // the zero-filled copies of the step past the last
    __syncthreads();                                      // everyone is done with the stages
    T (*ys)[BN + 8] = reinterpret_cast<T (*)[BN + 8]>(smem);
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                *reinterpret_cast<unsigned*>(&ys[wm + 16 * i + (lane >> 2) + 8 * h][wn + 8 * j + 2 * (lane & 3)]) =
                    kreg::Cvt<T>::pack(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
    __syncthreads();
    // then 8 consecutive columns of a row per thread and round: 16-byte stores where N % 8 == 0 (rows
    // 16-byte aligned), else one element at a time
#pragma unroll 1
    for (int e = threadIdx.x; e < BM * BN / 8; e += 256) {
        int r = e / (BN / 8), c8 = 8 * (e % (BN / 8));
        long long t = t0 + r, n = n0 + c8;
        if (t < Tn) {
            if (N % 8 == 0) {
                if (n < N) *reinterpret_cast<uint4*>(Y + t * N + n) = *reinterpret_cast<const uint4*>(&ys[r][c8]);
            } else {
#pragma unroll
                for (int j = 0; j < 8; j++)
                    if (n + j < N) Y[t * N + n + j] = ys[r][c8 + j];
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
