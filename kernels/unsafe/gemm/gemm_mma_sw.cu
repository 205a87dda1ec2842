// Unsafe tensor-core GEMM (entries gemm_mma_sw_bf16, gemm_mma_sw_f16): Y = X W^T, fp32 accumulation in
// mma.sync.m16n8k16, one rounding to DT. Block tile BM x BN (128 x 256 by default) of 8 warps (2 x 4),
// 64 x 64 per warp (4 x 8 mma tiles, 128 fp32 accumulators a thread; KREG_WN: 64 x WN warp tiles); K in steps of BK (32) through a
// STAGES-deep cp.async pipeline in dynamic shared memory, tiles stored unpadded with their 16-byte
// chunks XOR-swizzled by row so that ldmatrix's eight row addresses hit eight distinct bank groups.
// Blocks walk T fastest (blockIdx.x = T tile): the blocks in flight share W tiles and all of X stays in
// L2, so W is read from memory about once. Epilogue: accumulators rounded to DT into a padded shared
// Y tile, then 16-byte stores of 8 consecutive columns. Edges: rows past T or N and k past K are
// zero-filled copies (cp.async src-size 0). Unproven (the pipeline's wait distance; see gemm_mma_pipe).
#include "kreg_own.cuh"

#ifndef KREG_BN
#define KREG_BN 256
#endif
#ifndef KREG_BK
#define KREG_BK 32
#endif
#ifndef KREG_STAGES
#define KREG_STAGES 4
#endif
#ifndef KREG_WN
#define KREG_WN 64     // warp tile width (a multiple of 16; BN / WN warps along n)
#endif
#ifndef KREG_MINB
#define KREG_MINB 1    // __launch_bounds__' minimum blocks per SM
#endif
constexpr int BM = 128, BN = KREG_BN, BK = KREG_BK, STAGES = KREG_STAGES, WN = KREG_WN;
constexpr int WARPS_N = BN / WN, THREADS = 32 * 2 * WARPS_N;    // warps 2 (m) x WARPS_N (n)
constexpr int CH = BK / 8;                                       // 16-byte chunks per tile row
constexpr int XV = BM * CH / THREADS, WV = BN * CH / THREADS;    // chunks a thread copies per stage
constexpr int STAGE_ELEMS = (BM + BN) * BK;
constexpr int YLD = BN + 8;                                      // padded Y row (elements)
constexpr int MT = 4, NT = WN / 8;                               // mma tiles per warp (64 x WN)
static_assert(CH == 4 || CH == 8, "BK must be 32 or 64");
static_assert(WN % 16 == 0 && BN % WN == 0 && BM * CH % THREADS == 0 && BN * CH % THREADS == 0, "tile shapes");
static_assert(STAGES * STAGE_ELEMS >= BM * YLD, "the Y tile must fit in the stages' shared memory");

// The swizzled element offset of (row r, 16-byte chunk c) in a tile with CH chunks a row: the chunk is
// XORed with bits of the row so that 8 consecutive rows at one logical chunk use 8 distinct bank groups.
__device__ __forceinline__ int swz(int r, int c) {
    return r * BK + 8 * (c ^ (CH == 8 ? (r & 7) : ((r >> 1) & 3)));
}

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

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// 16 bytes global -> shared, asynchronously; zero-filled when !valid (then src is not read).
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

// This thread's chunks of a stage: shared offsets (swizzled) and global row pointers (row 0 past T or N,
// where nothing is copied), fixed for the whole K loop; a stage adds its k0.
template <class T> struct Chunks {
    const T* x[XV];
    const T* w[WV];
    unsigned xo[XV], wo[WV];
    int xk[XV], wk[WV];
    bool xin[XV], win[WV];
};

template <class T>
__device__ __forceinline__ Chunks<T> chunks_of(const T* __restrict__ X, const T* __restrict__ W, long long t0,
                                               long long n0, int Tn, int N, int K) {
    Chunks<T> c;
#pragma unroll
    for (int h = 0; h < XV; h++) {
        int v = threadIdx.x + THREADS * h, r = v / CH;
        c.xin[h] = t0 + r < Tn;
        c.xk[h] = 8 * (v % CH);
        c.x[h] = X + (c.xin[h] ? (t0 + r) * K + c.xk[h] : 0);
        c.xo[h] = 2 * swz(r, v % CH);
    }
#pragma unroll
    for (int h = 0; h < WV; h++) {
        int v = threadIdx.x + THREADS * h, r = v / CH;
        c.win[h] = n0 + r < N;
        c.wk[h] = 8 * (v % CH);
        c.w[h] = W + (c.win[h] ? (n0 + r) * K + c.wk[h] : 0);
        c.wo[h] = 2 * swz(r, v % CH);
    }
    return c;
}

// One stage's copies at step k0 (zero-filled past T, N or K), then one commit group.
template <class T>
__device__ __forceinline__ void load_stage(unsigned xs, unsigned ws, const Chunks<T>& c, int K, int k0) {
#pragma unroll
    for (int h = 0; h < XV; h++) {
        bool ok = c.xin[h] && k0 + c.xk[h] < K;
        cp_async16(xs + c.xo[h], c.x[h] + (ok ? k0 : 0), ok);
    }
#pragma unroll
    for (int h = 0; h < WV; h++) {
        bool ok = c.win[h] && k0 + c.wk[h] < K;
        cp_async16(ws + c.wo[h], c.w[h] + (ok ? k0 : 0), ok);
    }
    asm volatile("cp.async.commit_group;");
}

template <class T>
__device__ __forceinline__ void gemm_sw(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                        int Tn, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* smem = reinterpret_cast<T*>(smem_raw);
    const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = 64 * (warp / WARPS_N), wn = WN * (warp % WARPS_N);
    const long long t0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.f;
    const int steps = (K + BK - 1) / BK;
    const Chunks<T> ch = chunks_of(X, W, t0, n0, Tn, N, K);
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        unsigned st = sbase + 2 * s * STAGE_ELEMS;
        load_stage(st, st + 2 * BM * BK, ch, K, s * BK);
    }
    // ldmatrix row and chunk of this lane: A rows wm + 16 i + (lane & 15), chunk + (lane >> 4);
    // B rows wn + 16 jj + (lane & 7) + 8 (lane >> 4), chunk + ((lane >> 3) & 1)
    const int ar = wm + (lane & 15), ac = lane >> 4;
    const int br = wn + (lane & 7) + 8 * (lane >> 4), bc = (lane >> 3) & 1;
#pragma unroll 1
    for (int s = 0; s < steps; s++) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();
        {
            int ls = s + STAGES - 1;
            unsigned st = sbase + 2 * (ls % STAGES) * STAGE_ELEMS;
            load_stage(st, st + 2 * BM * BK, ch, K, ls * BK);
        }
        const unsigned xs = sbase + 2 * (s % STAGES) * STAGE_ELEMS, ws = xs + 2 * BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            unsigned a[MT][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < MT; i++) ldmatrix_x4(a[i], xs + 2 * swz(ar + 16 * i, 2 * kk + ac));
#pragma unroll
            for (int jj = 0; jj < NT / 2; jj++) {
                unsigned r[4];
                ldmatrix_x4(r, ws + 2 * swz(br + 16 * jj, 2 * kk + bc));
                b[2 * jj][0] = r[0]; b[2 * jj][1] = r[1]; b[2 * jj + 1][0] = r[2]; b[2 * jj + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) Mma<T>::run(acc[i][j], a[i], b[j]);
        }
    }
    asm volatile("cp.async.wait_all;" ::: "memory");     // the zero-filled copies past the last step
    __syncthreads();                                      // everyone is done with the stages
    // accumulator c of tile (i, j): row g (c < 2) or g + 8, columns 2 tq, 2 tq + 1; g = lane / 4, tq = lane % 4
    unsigned* yw = reinterpret_cast<unsigned*>(smem);     // Y tile [BM][YLD] as words
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                yw[((wm + 16 * i + (lane >> 2) + 8 * h) * YLD + wn + 8 * j + 2 * (lane & 3)) / 2] =
                    kreg::Cvt<T>::pack(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
    __syncthreads();
#pragma unroll 1
    for (int e = threadIdx.x; e < BM * BN / 8; e += THREADS) {
        int r = e / (BN / 8), c8 = 8 * (e % (BN / 8));
        long long t = t0 + r, n = n0 + c8;
        if (t >= Tn || n >= N) continue;
        uint4 v = *reinterpret_cast<const uint4*>(smem + r * YLD + c8);
        if (N % 8 == 0) {
            *reinterpret_cast<uint4*>(Y + t * N + n) = v;
        } else {
#pragma unroll 1
            for (int j = 0; j < 8 && n + j < N; j++) Y[t * N + n + j] = smem[r * YLD + c8 + j];
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, KREG_MINB) gemm_mma_sw_bf16(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_sw(X, W, Y, T, N, K);
}

extern "C" __global__ void __launch_bounds__(THREADS, KREG_MINB) gemm_mma_sw_f16(const __half* __restrict__ X,
        const __half* __restrict__ W, __half* __restrict__ Y, int T, int N, int K) {
    gemm_sw(X, W, Y, T, N, K);
}
