// The causal tensor-core prefill of attention_prefill_tc.cu (safe) and attention_prefill_tc_lf.cu (unsafe:
// -DKREG_LONGEST_FIRST=1), one kernel source for both registered builds.
// Causal prefill attention on tensor cores (entries attention_prefill_tc_bf16, attention_prefill_tc_f16),
// flash-attention-2 tiling (it replaced the unsafe cp.async attention_prefill_mma: 1.60x SDPA at T = 2048 on
// the H100 against this kernel's 1.33x), written for a proof that closes for all dims the way gemm_tc's does
// (kernels/safe/gemm/gemm_tc.cu): no cp.async;
// every global address a row pointer plus a column under a plain guard; one shared K and one shared V tile;
// 16-byte output stores. Block (x, h) of 4 warps owns the 64 query rows t0 .. t0+63 of query head h
// (t0 = 64 x; KREG_LONGEST_FIRST=1: 64 (gridDim.x - 1 - x), the longest rows first, which the prover does not
// close: see below); warp w owns rows t0 + 16w .. +15 and keeps
// them in registers: Q as mma A fragments (8 k-steps of 16 dims), the output as 16 fp32 accumulator tiles
// of 16 x 8, and per row a running max and weight sum (base 2). Keys go in tiles of 64: thread i holds the
// 16-byte vectors i + 128 p (row v / 16, dims 8 (v % 16) ..) of the next K and V tiles in registers (zeros
// at or past start + min(t0 + 64, T)) while the tensor cores work on this tile; per tile: the registers
// to the shared tiles [64][136] (rows padded: conflict-free ldmatrix), a barrier, the next tile's loads,
// S = Q K^T (mma m16n8k16, B fragments by ldmatrix), scaled to base 2, causal mask (key > query position:
// -inf), online softmax in fp32, P split into two DT parts (hi + lo) as the A fragments of O += P V (V's B
// fragments by ldmatrix.trans), a barrier. The epilogue divides by the row sums (reduced over the 4 lanes
// of a row), transposes words within each quad so that lane tq holds 8 consecutive dims, and writes each
// output row slice once with one 16-byte store (rows past T skipped). q, k_cache, v_cache are only read;
// every thread reaches every barrier (the loop's trip count is block-uniform).
// Registered: -DKREG_DIAGONLY=1 -DKREG_SKIPRESCALE=1 (safe; the mask's compares only in a warp's diagonal tiles,
// o and l rescaled only when a row max of the warp changed: bit-identical results), and the unsafe
// attention_prefill_tc_lf_* (kernels/unsafe/attention_prefill, the same header) with -DKREG_LONGEST_FIRST=1 as well. H100, Qwen3-4B heads,
// start 0, x torch SDPA flash (bench/results/attention_prefill_tc_candidates.txt, 2026-11-24): block order
// 1.41x at T = 2048, 1.67x at 8192; DIAGONLY + SKIPRESCALE 1.32 - 1.34x / 1.55 - 1.57x; with LONGEST_FIRST
// 1.31 - 1.32x / 1.51 - 1.53x (runs 2 and 3, and bench/results/attention_prefill_gpu.txt).
// Tried and not registered: 8 warps (KREG_WARPS=8, 128-row blocks: 1.41x / 1.56x); one register stage for K
// and V in turn (KREG_SPLIT: three barriers a tile, 1.59x / 1.87x); 32- or 16-key tiles at 3 or 4 blocks an
// SM (KREG_BN, KREG_MINB: 1.67x - 1.98x: the barriers a key double); rows counted from the end
// (KREG_FROM_END: longest first without gridDim, 1.37x / 1.62x before DIAGONLY); two K/V buffers in dynamic
// shared memory, one barrier a tile (KREG_DB=1: 1.42x / 1.63x; unrolled by two, KREG_DB=2: 1.46x / 1.71x).
// Proof state (prover-0.10, CPU): the registered safe build all four properties for all dims in ~19 s of
// solver work (budget 30 s; the block-order build without the two options ~23 s). Not within the budget:
// KREG_LONGEST_FIRST=1 (the output write/write pairs of one store instruction, row = 64 (gridDim.x - 1 - x) +
// ..., do not close in the integer solver for all dims: race_free only per named case), KREG_FROM_END (row
// T - 1 - i: the same, per named case, ~90 s), KREG_DB (race_free and barrier_safe left open at 30 s).
#pragma once
#include "kreg_own.cuh"
#include "kreg_mma.cuh"

namespace {

#ifndef KREG_LONGEST_FIRST
#define KREG_LONGEST_FIRST 0   // 1: block x takes row tile gridDim.x - 1 - x (the longest rows start first; not proven)
#endif
#ifndef KREG_FROM_END
#define KREG_FROM_END 0        // 1: rows counted from the end: block x takes rows T - 1 - BM x down to T - BM (x + 1)
                               // (longest first), row i of the block order at T - 1 - i
#endif
#if KREG_FROM_END
#define KREG_ROW(i) (last - (i))   // last = T - 1: a subtraction (n_q - 1 - i compiles to not + add)
#else
#define KREG_ROW(i) (i)
#endif
#ifndef KREG_WARPS
#define KREG_WARPS 4           // warps of a block (16 query rows each): BM = 16 KREG_WARPS
#endif
#ifndef KREG_SPLIT
#define KREG_SPLIT 0           // 1: one register stage, K and V in turn (three barriers a tile, half the registers)
#endif
#ifndef KREG_DB
#define KREG_DB 0              // 1: two K/V buffers (dynamic shared, 4 BN LD elements): one barrier a tile;
                               // 2: the same, the loop unrolled by two (each buffer at a constant offset)
#endif
#ifndef KREG_BN
#define KREG_BN 64             // keys a tile (32 or 64)
#endif
#ifdef KREG_MINB
#define KREG_BOUNDS __launch_bounds__(NT, KREG_MINB)   // at least KREG_MINB blocks an SM
#else
#define KREG_BOUNDS __launch_bounds__(NT)
#endif

constexpr int BN = KREG_BN, NJ = BN / 8, NKV = BN / 16, D = 128, LD = D + 8, NT = 32 * KREG_WARPS, BM = 16 * KREG_WARPS;
constexpr int VT = BN * D / 8 / NT;   // VT: 16-byte vectors a thread stages of one K or V tile
#define KREG_INF __int_as_float(0x7f800000)

// One 16-byte global store as one instruction (NVRTC would split a uint4 store it cannot prove aligned).
template <class T> __device__ __forceinline__ void st_global_v4(T* p, const unsigned (&u)[4]) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3])
                 : "memory");
}

// This thread's vectors of the K and V tiles of keys kb*64 .. kb*64+63 (kv head g): zeros at or past n_keys.
template <class T>
__device__ __forceinline__ void load_tile(uint4 (&kr)[VT], uint4 (&vr)[VT], const T* __restrict__ kc,
                                          const T* __restrict__ vc, int kb, int n_keys, int Hkv, int g) {
#pragma unroll
    for (int p = 0; p < VT; p++) {
        const int v = threadIdx.x + NT * p, key = kb * BN + (v >> 4), col = (v & 15) * 8;
        kr[p] = vr[p] = make_uint4(0u, 0u, 0u, 0u);
        if (key < n_keys) {
            const long long row = ((long long)key * Hkv + g) * D + col;
            kr[p] = kreg::load_raw<T>(kc + row);
            vr[p] = kreg::load_raw<T>(vc + row);
        }
    }
}

// This thread's vectors of one tile (K or V) of keys kb*64 .. kb*64+63 (kv head g): zeros at or past n_keys.
template <class T>
__device__ __forceinline__ void load_one(uint4 (&r)[VT], const T* __restrict__ c, int kb, int n_keys, int Hkv, int g) {
#pragma unroll
    for (int p = 0; p < VT; p++) {
        const int v = threadIdx.x + NT * p, key = kb * BN + (v >> 4), col = (v & 15) * 8;
        r[p] = make_uint4(0u, 0u, 0u, 0u);
        if (key < n_keys) r[p] = kreg::load_raw<T>(c + ((long long)key * Hkv + g) * D + col);
    }
}

template <class T> __device__ __forceinline__ void store_one(T (*s)[LD], const uint4 (&r)[VT]) {
#pragma unroll
    for (int p = 0; p < VT; p++) {
        const int v = threadIdx.x + NT * p;
        *reinterpret_cast<uint4*>(&s[v >> 4][(v & 15) * 8]) = r[p];
    }
}

template <class T>
__device__ __forceinline__ void store_tile(T (*ks)[LD], T (*vs)[LD], const uint4 (&kr)[VT], const uint4 (&vr)[VT]) {
#pragma unroll
    for (int p = 0; p < VT; p++) {
        const int v = threadIdx.x + NT * p;
        *reinterpret_cast<uint4*>(&ks[v >> 4][(v & 15) * 8]) = kr[p];
        *reinterpret_cast<uint4*>(&vs[v >> 4][(v & 15) * 8]) = vr[p];
    }
}

template <class T>
__device__ __forceinline__ void prefill(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                        float scale, T* __restrict__ out, int n_q, int Hq, int Hkv, int start) {
#if KREG_DB
    // buffer b: K at rows 2 b BN .., V at (2 b + 1) BN .. of the dynamic shared tile array
    extern __shared__ __align__(16) unsigned char kreg_dyn[];
    T (*const kv_base)[LD] = reinterpret_cast<T (*)[LD]>(kreg_dyn);
    T (*Ks)[LD] = kv_base, (*Vs)[LD] = kv_base + BN;
#else
    __shared__ __align__(16) T Ks[BN][LD];
    __shared__ __align__(16) T Vs[BN][LD];
#endif
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gr = lane >> 2, tq = lane & 3;
    const int t0 = (KREG_LONGEST_FIRST ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM, h = blockIdx.y;
    const int last = n_q - 1;
    const int g = (int)((unsigned)h / ((unsigned)Hq / (unsigned)Hkv));
#if KREG_FROM_END
    const int n_keys = start + n_q - t0;                    // keys 0 .. n_keys - 1 are seen by some row
#else
    const int n_keys = start + min(t0 + BM, n_q);          // keys 0 .. n_keys - 1 are seen by some row
#endif
    const int tiles = (n_keys + BN - 1) / BN;
    const float sl2 = scale * 1.4426950408889634f;

#if KREG_SPLIT
    uint4 kr[VT];
    load_one<T>(kr, kc, 0, n_keys, Hkv, g);
#else
    uint4 kr[VT], vr[VT];
    load_tile<T>(kr, vr, kc, vc, 0, n_keys, Hkv, g);
#endif

    // Q fragments of rows r0 = t0 + 16 warp + gr and r0 + 8 in block order (at KREG_ROW of them; zeros past T)
    const int r0 = t0 + 16 * warp + gr;
    unsigned qa[8][4];
    {
        const bool in0 = r0 < n_q, in1 = r0 + 8 < n_q;
        const unsigned* q0 = reinterpret_cast<const unsigned*>(q + ((long long)(in0 ? KREG_ROW(r0) : 0) * Hq + h) * D);
        const unsigned* q1 = reinterpret_cast<const unsigned*>(q + ((long long)(in1 ? KREG_ROW(r0 + 8) : 0) * Hq + h) * D);
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            qa[kk][0] = in0 ? q0[kk * 8 + tq] : 0u;
            qa[kk][1] = in1 ? q1[kk * 8 + tq] : 0u;
            qa[kk][2] = in0 ? q0[kk * 8 + 4 + tq] : 0u;
            qa[kk][3] = in1 ? q1[kk * 8 + 4 + tq] : 0u;
        }
    }
    const int qpos0 = start + KREG_ROW(r0), qpos1 = start + KREG_ROW(r0 + 8);
    // the warp's first and last query positions
#if KREG_FROM_END
    const int wlo = qpos1 - 7 + gr;          // rows r0 - gr + 15 .. r0 - gr
#else
    const int wlo = qpos0 - gr;
#endif

    float o[16][4];
#pragma unroll
    for (int d = 0; d < 16; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
    float m0 = -KREG_INF, m1 = -KREG_INF, l0 = 0.f, l1 = 0.f;
    unsigned ph[NKV][4], pl[NKV][4];

    // S = Q K^T of this tile from Ks, scaled to base 2, causal mask, online softmax: the running max and sum
    // and o rescaled, P (hi + lo) as the A fragments of P V
    auto scores = [&](int kb, bool diag) {
        float s[NJ][4];
#pragma unroll
        for (int j = 0; j < NJ; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
        for (int j = 0; j < NJ; j++) {
#pragma unroll
            for (int kk = 0; kk < 8; kk += 2) {
                unsigned b[4];
                // matrices: keys 8j + (lane % 8), dims 16 kk + 8 (lane / 8): b0, b1 of k-step kk, then kk + 1
                ldmatrix_x4(b, &Ks[8 * j + (lane & 7)][16 * kk + 8 * (lane >> 3)]);
                Mma<T>::run(s[j], qa[kk], b[0], b[1]);
                Mma<T>::run(s[j], qa[kk + 1], b[2], b[3]);
            }
        }
        // scores in base 2, causal mask, online softmax (rows gr and gr + 8 of the warp)
        const int key0 = kb * BN + 2 * tq;
        float mx0 = m0, mx1 = m1;
#if KREG_DIAGONLY
        if (diag) {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int key = key0 + 8 * j + e;
                    s[j][e] = key <= qpos0 ? s[j][e] * sl2 : -KREG_INF;
                    s[j][2 + e] = key <= qpos1 ? s[j][2 + e] * sl2 : -KREG_INF;
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int c = 0; c < 4; c++) s[j][c] *= sl2;
        }
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
            mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
        }
#else
#pragma unroll
        for (int j = 0; j < NJ; j++) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int key = key0 + 8 * j + e;
                s[j][e] = key <= qpos0 || !diag ? s[j][e] * sl2 : -KREG_INF;
                s[j][2 + e] = key <= qpos1 || !diag ? s[j][2 + e] * sl2 : -KREG_INF;
                mx0 = fmaxf(mx0, s[j][e]);
                mx1 = fmaxf(mx1, s[j][2 + e]);
            }
        }
#endif
#pragma unroll
        for (int x = 1; x <= 2; x <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, x));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, x));
        }
        const float b0 = mx0 == -KREG_INF ? 0.f : mx0, b1 = mx1 == -KREG_INF ? 0.f : mx1;
        const float c0 = exp2f(m0 - b0), c1 = exp2f(m1 - b1);
#if KREG_SKIPRESCALE
        if (!__all_sync(0xffffffffu, mx0 == m0 && mx1 == m1)) {   // else c0 = c1 = 1 (or o, l still 0)
#endif
        l0 *= c0;
        l1 *= c1;
#pragma unroll
        for (int d = 0; d < 16; d++) {
            o[d][0] *= c0;
            o[d][1] *= c0;
            o[d][2] *= c1;
            o[d][3] *= c1;
        }
#if KREG_SKIPRESCALE
        }
#endif
        m0 = mx0;
        m1 = mx1;
        // P as A fragments (k-step = 16 keys) in two parts, P = hi + lo (hi = P rounded to DT, lo = the
        // rest rounded to DT): P V carries P to ~2^-16 relative
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            const float p0 = exp2f(s[j][0] - b0), p1 = exp2f(s[j][1] - b0);
            const float p2 = exp2f(s[j][2] - b1), p3 = exp2f(s[j][3] - b1);
            l0 += p0 + p1;
            l1 += p2 + p3;
            const unsigned h01 = kreg::Cvt<T>::pack(p0, p1), h23 = kreg::Cvt<T>::pack(p2, p3);
            const float2 r01 = kreg::Cvt<T>::unpack(h01), r23 = kreg::Cvt<T>::unpack(h23);
            ph[j >> 1][(j & 1) * 2 + 0] = h01;
            ph[j >> 1][(j & 1) * 2 + 1] = h23;
            pl[j >> 1][(j & 1) * 2 + 0] = kreg::Cvt<T>::pack(p0 - r01.x, p1 - r01.y);
            pl[j >> 1][(j & 1) * 2 + 1] = kreg::Cvt<T>::pack(p2 - r23.x, p3 - r23.y);
        }
    };
    // O += P V of this tile from Vs
    auto pv = [&]() {
#pragma unroll
        for (int kv = 0; kv < NKV; kv++) {
#pragma unroll
            for (int d = 0; d < 16; d += 2) {
                unsigned b[4];
                // matrices: keys 16 kv + 8 ((lane / 8) % 2) + lane % 8, dims 8 d + 8 (lane / 16)
                ldmatrix_x4_trans(b, &Vs[16 * kv + 8 * ((lane >> 3) & 1) + (lane & 7)][8 * d + 8 * (lane >> 4)]);
                Mma<T>::run(o[d], pl[kv], b[0], b[1]);
                Mma<T>::run(o[d + 1], pl[kv], b[2], b[3]);
                Mma<T>::run(o[d], ph[kv], b[0], b[1]);
                Mma<T>::run(o[d + 1], ph[kv], b[2], b[3]);
            }
        }
    };

#if KREG_SPLIT
    store_one<T>(Ks, kr);
    load_one<T>(kr, vc, 0, n_keys, Hkv, g);
    __syncthreads();
#elif KREG_DB
    store_tile<T>(Ks, Vs, kr, vr);
    __syncthreads();
    load_tile<T>(kr, vr, kc, vc, 1, n_keys, Hkv, g);
#endif
#if KREG_DB == 2
    // the loop unrolled by two: buffer 0 holds the even tiles, buffer 1 the odd ones (constant offsets)
    auto step = [&](int kb, int cur) {
        const bool live = kb * BN <= wlo + 15, diag = kb * BN + BN - 1 > wlo;
        Ks = kv_base + cur * 2 * BN;
        Vs = Ks + BN;
        if (live) {
            scores(kb, diag);
            pv();
        }
        store_tile<T>(kv_base + (1 - cur) * 2 * BN, kv_base + (1 - cur) * 2 * BN + BN, kr, vr);
        load_tile<T>(kr, vr, kc, vc, kb + 2, n_keys, Hkv, g);
        __syncthreads();                                     // tile kb + 1 stored; every warp done with tile kb
    };
#pragma unroll 1
    for (int kb = 0; kb < tiles; kb += 2) {
        step(kb, 0);
        if (kb + 1 < tiles) step(kb + 1, 1);
    }
#else
#pragma unroll 1
    for (int kb = 0; kb < tiles; kb++) {
        // warp-uniform: some key of the tile is visible to the warp's last row (else the warp skips the
        // math); the tile reaches past the warp's first row (else no mask)
        const bool live = kb * BN <= wlo + 15, diag = kb * BN + BN - 1 > wlo;
#if KREG_SPLIT
        // Ks holds K of tile kb, kr V of tile kb (in flight)
        if (live) scores(kb, diag);
        __syncthreads();                                     // every warp is done with Ks (and Vs of tile kb - 1)
        store_one<T>(Vs, kr);
        load_one<T>(kr, kc, kb + 1, n_keys, Hkv, g);         // the next K tile, in flight during P V
        __syncthreads();
        if (live) pv();
        store_one<T>(Ks, kr);                                // Ks is free since the first barrier
        load_one<T>(kr, vc, kb + 1, n_keys, Hkv, g);
        __syncthreads();
#elif KREG_DB
        // buffer kb % 2 holds tile kb, the registers tile kb + 1; buffer (kb + 1) % 2 was last read in
        // iteration kb - 1, before that iteration's barrier
        Ks = kv_base + (kb & 1) * 2 * BN;
        Vs = Ks + BN;
        if (live) {
            scores(kb, diag);
            pv();
        }
        store_tile<T>(kv_base + ((kb + 1) & 1) * 2 * BN, kv_base + ((kb + 1) & 1) * 2 * BN + BN, kr, vr);
        load_tile<T>(kr, vr, kc, vc, kb + 2, n_keys, Hkv, g);
        __syncthreads();                                     // tile kb + 1 stored; every warp done with tile kb
#else
        store_tile<T>(Ks, Vs, kr, vr);
        __syncthreads();
        load_tile<T>(kr, vr, kc, vc, kb + 1, n_keys, Hkv, g);     // the next tile's, in flight during the math
        if (live) {
            scores(kb, diag);
            pv();
        }
        __syncthreads();                                     // every warp is done with Ks and Vs
#endif
    }
#endif

#pragma unroll
    for (int x = 1; x <= 2; x <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, x);
        l1 += __shfl_xor_sync(0xffffffffu, l1, x);
    }
    // accumulator c of tile d: row gr (c < 2) or gr + 8, dims 8 d + 2 tq + (c & 1). Per row half hf and
    // group of 4 tiles (dims 32 jg ..): a 4 x 4 transpose of words within the quad (round r: lane tq sends
    // its word of tile 4 jg + (tq ^ r)) leaves lane tq the 8 consecutive dims of tile 4 jg + tq
    const float inv[2] = {1.f / l0, 1.f / l1};
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const int row = r0 + 8 * hf;
#pragma unroll
        for (int jg = 0; jg < 4; jg++) {
            unsigned w[4], u[4] = {0u, 0u, 0u, 0u};
#pragma unroll
            for (int j = 0; j < 4; j++)
                w[j] = kreg::Cvt<T>::pack(o[4 * jg + j][2 * hf] * inv[hf], o[4 * jg + j][2 * hf + 1] * inv[hf]);
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int m = tq ^ r;
                const unsigned mine = m == 0 ? w[0] : m == 1 ? w[1] : m == 2 ? w[2] : w[3];
                const unsigned got = r ? __shfl_xor_sync(0xffffffffu, mine, r) : mine;
                u[0] = m == 0 ? got : u[0];
                u[1] = m == 1 ? got : u[1];
                u[2] = m == 2 ? got : u[2];
                u[3] = m == 3 ? got : u[3];
            }
            if (row < n_q) st_global_v4(out + ((long long)KREG_ROW(row) * Hq + h) * D + 32 * jg + 8 * tq, u);
        }
    }
}

}  // namespace

#define ENTRY(NAME, T)                                                                                          \
    extern "C" __global__ void KREG_BOUNDS NAME(const T* __restrict__ q, const T* __restrict__ k_cache, \
                                                           const T* __restrict__ v_cache, float scale,            \
                                                           T* __restrict__ out, int T_, int Hq, int Hkv, int start) { \
        prefill<T>(q, k_cache, v_cache, scale, out, T_, Hq, Hkv, start);                                        \
    }
ENTRY(attention_prefill_tc_bf16, __nv_bfloat16)
ENTRY(attention_prefill_tc_f16, __half)
