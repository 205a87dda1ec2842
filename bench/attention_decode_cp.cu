// Bench-only flash-decoding split through a cp.async ring (bench/attention_decode_dev2.py; NOT registered: slower
// than attention_decode_rs.cu on the H100 and its race proof does not close within the checker's 30 s budget,
// see bench/results/attention_decode_dev2_run2.txt). Entries attention_decode_bf16, attention_decode_f16:
// the blocks, splits, positions, arithmetic and outputs of attention_decode_rs.cu (read its header first),
// but the K/V rows reach the registers through shared memory. Each thread copies its 16-byte slices of the
// K and V rows of one loop step (U = 4 positions of its half-warp: split indices t*32 + warp*8 + half*4 + u
// at step t) with cp.async.cg into slots of stage t % NST that only it reads back, so no barrier orders the
// ring (each thread waits for its own copies: cp.async.wait_group). Copies run AHEAD steps ahead
// (AHEAD <= NST - 1; stage t % NST is refilled by step t + NST, issued at step t + NST - AHEAD, after this
// thread has read it into registers at step t): AHEAD * 16 KB a block in flight, where the register
// pipeline of attention_decode_rs.cu holds at most two steps (16 KB a block, half of it while it computes).
// The loop runs rounds of NST steps, the stages static in a round (no stage index for the prover to track);
// steps past the split (the round's tail) copy nothing (zero-filled, src not read) and compute masked (weight
// 0). The first EARLY (default AHEAD) steps' copies are bounded by S, not n: they go out before n arrives (n
// then masks); the rest of the first AHEAD after it, bounded by n.
// Dynamic shared memory: NST * 16 KB (the launch's shared bytes; KREG_NST = 4: 65536). On the H100 (Qwen3-4B heads,
// 8192 positions, P = 33): the ring's loads-only floor is 13.20 us alone (rs: 13.52) but 15.20 as a PDL pair (rs:
// 14.79; probably its shared memory keeps the next launch's blocks from waiting resident: rs padded to 80 KB 15.48);
// with the arithmetic every ring
// loses to rs_nm (15.25 alone, 15.80 PDL): 3 stages at 192 registers 16.09 / 16.02, 4 stages 16.77 / 16.50
// (uncapped ptxas takes 243 registers), 6 stages 26.2 (81 KB of SASS; 12 steps for 8), KREG_DYN 4 stages 15.76 alone
// but 18.26 PDL (159 registers: a third block fits, which lost under PDL before too). The prover (prover-0.12): read_only / in_bounds /
// barrier_safe proven for all dims, race_free not within 30 s (thousands of shared-slot pairs: a write of each of
// the 8 slots a step against every other copy and read, each a full query with the loop's path conditions).
// Bench knobs: KREG_FLOOR=1 (the arithmetic replaced by an XOR of the words read back: the memory pipeline
// alone), KREG_CONTIG=1 (split p takes the chunk [p*C, p*C + C), C = cdiv(S, P): contiguous streams, not the
// op's cyclic splits; the merged output is still the attention, each split's partial is not the contract's).
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"

#define KREG_INF __int_as_float(0x7f800000)

#ifndef KREG_NST
#define KREG_NST 4        // ring stages (16 KB each for a block of 128 threads)
#endif
#ifndef KREG_AHEAD
#define KREG_AHEAD (KREG_NST - 1)   // steps whose copies are in flight while a step computes
#endif
#ifndef KREG_EARLY
#define KREG_EARLY KREG_AHEAD   // of the first AHEAD steps, those copied before n arrives (bounded by S)
#endif
#ifndef KREG_DYN
#define KREG_DYN 0        // (a bench knob) 1: one step a loop iteration, stage it % NST (not provable here: see the loop)
#endif
#ifndef KREG_PREF
#define KREG_PREF 0       // the first KREG_PREF steps' rows hinted into the L2 before the PDL wait
#endif
#ifndef KREG_MINB
#define KREG_MINB 1       // blocks per SM the compiler must fit (a register cap: 65536 / (128 * MINB))
#endif
#ifndef KREG_FLOOR
#define KREG_FLOOR 0      // (a bench knob) loads only: the arithmetic replaced by an XOR of the words read back
#endif
#ifndef KREG_CONTIG
#define KREG_CONTIG 0     // (a bench knob) contiguous chunks of cdiv(S, P) positions instead of cyclic splits
#endif
#define KREG_LAZY 0
constexpr int U = 4, HB = 4, WARPS = 4, HALVES = 2 * WARPS, D = 128, NT = 32 * WARPS;
enum { UL = U, NST = KREG_NST, AHEAD = KREG_AHEAD, EARLY = KREG_EARLY, STEP = HALVES * U };
static_assert(AHEAD >= 1 && AHEAD < NST, "a stage is refilled only after its thread has read it");
static_assert(EARLY >= 0 && EARLY <= AHEAD, "the early copies are some of the first AHEAD steps");
static_assert(U * HB == 16, "the reduce-scatter gives each of a half-warp's 16 lanes one (head, position) score");
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

// Merge (bm, bl, bacc) into (am, al, aacc): both rescaled to the larger max (all-empty stays empty, no NaN).
__device__ __forceinline__ void merge(float& am, float& al, float* aacc, float bm, float bl, const float* bacc) {
    float mx = fmaxf(am, bm);
    float base = mx == -KREG_INF ? 0.f : mx;
    float fa = exp2f(am - base), fb = exp2f(bm - base);
    am = mx;
    al = al * fa + bl * fb;
#pragma unroll
    for (int i = 0; i < 8; i++) aacc[i] = aacc[i] * fa + bacc[i] * fb;
}

// Before the PDL wait (no data reaches the program, checker/pdl.py): hint the L2 with the rows of this
// thread's first KREG_PREF loop iterations (their positions depend on the launch only, clamped below S).
__device__ __forceinline__ void prefetch_first(const void* kc, const void* vc, int Hkv, int S, int P) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, half = lane >> 4;
    const int p = blockIdx.y, g = blockIdx.z, d0 = (lane & 15) * 8;
#pragma unroll
    for (int it = 0; it < KREG_PREF; it++)
#pragma unroll
        for (int u = 0; u < UL; u++) {
            const int i = it * HALVES * UL + warp * 2 * UL + half * UL + u;
            const long long row = ((long long)min(p + i * P, S - 1) * Hkv + g) * D + d0;
            kreg::prefetch_l2((const char*)kc + 2 * row);
            kreg::prefetch_l2((const char*)vc + 2 * row);
        }
}

// Position of split index i of split p (cyclic: p + i*P; KREG_CONTIG: p*C + i).
__device__ __forceinline__ int position(int p, int i, int P, int C) {
    return KREG_CONTIG ? p * C + i : p + i * P;
}

// This thread's K and V slices of its U positions at the step from split index i0 (i0 + warp*8 + half*4 + u)
// into its slots of stage s (slot (s, u, K|V) at ring[(s*U + u)*2*NT + kv*NT + tid]), zero-filled for a
// position at or past end or an index at or past lim (the buffers' first row as the unread source); one
// commit group.
template <class T>
__device__ __forceinline__ void copy_step(uint4* ring, int s, const T* __restrict__ kc, const T* __restrict__ vc,
                                          int i0, int p, int P, int C, int end, int lim, int Hkv, int g, int d0) {
    const int tid = threadIdx.x, ib = i0 + (tid >> 5) * 2 * U + ((tid >> 4) & 1) * U;
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int j = position(p, ib + u, P, C);
        const bool ok = j < end && ib + u < lim;
        const long long row = ((long long)(ok ? j : 0) * Hkv + g) * D + d0;
        const unsigned dk = (unsigned)__cvta_generic_to_shared(ring + (s * U + u) * 2 * NT + tid);
        const unsigned dv = (unsigned)__cvta_generic_to_shared(ring + (s * U + u) * 2 * NT + NT + tid);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dk), "l"(kc + row), "r"(ok ? 16 : 0));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dv), "l"(vc + row), "r"(ok ? 16 : 0));
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// This thread's slots of stage s back into registers.
__device__ __forceinline__ void read_step(uint4* kr, uint4* vr, const uint4* ring, int s) {
#pragma unroll
    for (int u = 0; u < U; u++) {
        kr[u] = ring[(s * U + u) * 2 * NT + threadIdx.x];
        vr[u] = ring[(s * U + u) * 2 * NT + NT + threadIdx.x];
    }
}

// Per-lane online-softmax state: acc[h] the lane's 8 dims of head h's weighted V sum (rescaled to the
// head's running max m, which the 4 lanes li = 4h .. 4h+3 of each half-warp hold as mh), and lw the
// weight sum of this lane's (head li / 4, position li % 4) scores.
struct Lane {
    float acc[HB][8];
    float mh, lw;
    unsigned fl;      // KREG_FLOOR only
};

// c >= 0 ? a : b, as one PTX slct: opaque to the compiler, which would otherwise turn a select of two
// elements of a local array into a load from a selected address and leave the array in local memory.
__device__ __forceinline__ float pick(float a, float b, int c) {
    float r;
    asm("slct.f32.s32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "r"(c));
    return r;
}

// One reduce-scatter step at width W: lane li keeps v[0..W) or v[W..2W) (its bit W says which), plus the
// partner lane's (li ^ W) copy of the same half, in v[0..W).
template <int W>
__device__ __forceinline__ void halve(float* v, int li) {
    const int c = li & W ? -1 : 0;           // < 0: this lane keeps the upper half
#pragma unroll
    for (int j = 0; j < W; j++) {
        const float send = pick(v[j + W], v[j], c), keep = pick(v[j], v[j + W], c);
        v[j] = keep + __shfl_xor_sync(0xffffffffu, send, W);
    }
}

// One iteration over the rows kr, vr of the split's indices ib + u (valid below cnt).
// MASK false: the caller knows every index is below cnt (no test, no select).
template <class T, bool MASK = true>
__device__ __forceinline__ void step(Lane& st, const kreg::F8* qv, const uint4* kr, uint4* vr, int ib, int cnt,
                                     float sl2, int li, int hbase) {
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; u++) ok[u] = !MASK || ib + u < cnt;
#if KREG_FLOOR
#pragma unroll
    for (int u = 0; u < U; u++)
        st.fl ^= (ok[u] ? kr[u].x ^ kr[u].y ^ kr[u].z ^ kr[u].w : 0u) ^ vr[u].x ^ vr[u].y ^ vr[u].z ^ vr[u].w;
#else
    float v[16];      // v[h*U + u]: this lane's partial dot of head h with position u
#pragma unroll
    for (int u = 0; u < U; u++) {
        const kreg::F8 kv = kreg::unpack8<T>(kr[u]);
#pragma unroll
        for (int h = 0; h < HB; h++) {
            float d = 0.f;
#pragma unroll
            for (int i = 0; i < 8; i++) d = fmaf(qv[h].v[i], kv.v[i], d);
            v[h * U + u] = d;
        }
    }
    // reduce-scatter over the 16 lanes of the half-warp: at width w the lane keeps the half of its w values
    // its bit w selects and adds its partner's copy of them; lane li ends with v[0] = the score li
    halve<8>(v, li);
    halve<4>(v, li);
    halve<2>(v, li);
    halve<1>(v, li);
    const float s = !MASK || ib + (li & (U - 1)) < cnt ? v[0] * sl2 : -KREG_INF;
    float mx = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    mx = fmaxf(mx, st.mh);                         // the head's new running max (same in its 4 lanes)
    const float base = mx == -KREG_INF ? 0.f : mx;
    const float corr = exp2f(st.mh - base), w = exp2f(s - base);
    st.mh = mx;
    st.lw = fmaf(st.lw, corr, w);
#pragma unroll
    for (int u = 0; u < U; u++)
        if (!ok[u]) vr[u] = make_uint4(0u, 0u, 0u, 0u);   // a row loaded past n (any bits) weighs 0 * 0
    if (!KREG_LAZY || __any_sync(0xffffffffu, corr != 1.f)) {   // (lazy: else no head's max moved, all factors 1)
#pragma unroll
        for (int h = 0; h < HB; h++) {
            const float c = __shfl_sync(0xffffffffu, corr, hbase + h * U);
#pragma unroll
            for (int i = 0; i < 8; i++) st.acc[h][i] *= c;
        }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const kreg::F8 vv = kreg::unpack8<T>(vr[u]);
#pragma unroll
        for (int h = 0; h < HB; h++) {
            const float wt = __shfl_sync(0xffffffffu, w, hbase + h * U + u);
#pragma unroll
            for (int i = 0; i < 8; i++) st.acc[h][i] = fmaf(wt, vv.v[i], st.acc[h][i]);
        }
    }
#endif
}

// Step (round r, static stage J): wait until this thread's copies of stage J landed (AHEAD - 1 later groups
// may still be in flight), read them, refill stage (J + AHEAD) % NST (read at the step before, or earlier)
// with the step AHEAD ahead, compute.
#define KREG_CP_STEP(J)                                                                                       \
    {                                                                                                         \
        asm volatile("cp.async.wait_group %0;" ::"n"(AHEAD - 1) : "memory");                                  \
        uint4 kr[U], vr[U];                                                                                   \
        read_step(kr, vr, ring, J);                                                                           \
        copy_step<T>(ring, ((J) + AHEAD) % NST, kc, vc, ib0 + ((J) + AHEAD) * STEP, p, P, C, n, cnt, Hkv, g, d0); \
        step<T>(st, qv, kr, vr, ib0 + (J) * STEP + warp * 2 * U + half * U, cnt, sl2, li, hbase);            \
    }

template <class T>
__device__ __forceinline__ void decode(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                       const int* __restrict__ n_ptr, float scale, float* __restrict__ o_part,
                                       float* __restrict__ lse_part, int Hq, int Hkv, int S, int P) {
    extern __shared__ __align__(16) uint4 ring[];                   // [NST][U][K, V][thread]: 16-byte slots
    __shared__ __align__(16) float red_acc[HB][WARPS][D];
    __shared__ __align__(16) float2 red_ml[HB][WARPS];        // (max, weight sum) per head and warp
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, half = lane >> 4, d0 = (lane & 15) * 8;
    const int li = lane & 15, hbase = lane & 16;
    const int G = (int)((unsigned)Hq / (unsigned)Hkv), p = blockIdx.y, g = blockIdx.z;
    const int h0 = g * G + blockIdx.x * HB;                 // first query head of this block
    const int nh = min(HB, G - (int)blockIdx.x * HB);       // heads of this block (>= 1)
    const int C = KREG_CONTIG ? (int)(((unsigned)S + (unsigned)P - 1u) / (unsigned)P) : 0;
    // the first EARLY steps' copies: positions below S (n not yet known), any index
#pragma unroll
    for (int a = 0; a < EARLY; a++) copy_step<T>(ring, a, kc, vc, a * STEP, p, P, C, S, KREG_CONTIG ? C : S, Hkv, g, d0);
    const int n = n_ptr[0];
#if KREG_CONTIG
    const int cnt = max(0, min(C, n - p * C)), trips = C;
#else
    // split p: positions p, p + P, .. below n; cnt of them (Q or Q - 1), trips = Q indices per block
    const int Q = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P), r = n - (Q - 1) * P;
    const int cnt = p < r ? Q : Q - 1, trips = Q;
#endif
#pragma unroll
    for (int a = EARLY; a < AHEAD; a++) copy_step<T>(ring, a, kc, vc, a * STEP, p, P, C, n, cnt, Hkv, g, d0);
    const float sl2 = scale * LOG2E;

    kreg::F8 qv[HB];
    Lane st;
#pragma unroll
    for (int h = 0; h < HB; h++) {
        if (h < nh) qv[h] = kreg::load8<T>(q + (long long)(h0 + h) * D + d0);
        else
#pragma unroll
            for (int i = 0; i < 8; i++) qv[h].v[i] = 0.f;
#pragma unroll
        for (int i = 0; i < 8; i++) st.acc[h][i] = 0.f;
    }
    st.mh = -KREG_INF;
    st.lw = 0.f;
    st.fl = 0u;

#if KREG_DYN
    // (bench) one step an iteration, the stage a runtime index: compact code, but the copies in flight across
    // the back edge are completed by the next iterations' waits, which the prover does not carry that far
    int it = 0;
#pragma unroll 1
    for (int ib0 = 0; ib0 < trips; ib0 += STEP, it++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(AHEAD - 1) : "memory");
        uint4 kr[U], vr[U];
        read_step(kr, vr, ring, it % NST);
        copy_step<T>(ring, (it + AHEAD) % NST, kc, vc, ib0 + AHEAD * STEP, p, P, C, n, cnt, Hkv, g, d0);
        step<T>(st, qv, kr, vr, ib0 + warp * 2 * U + half * U, cnt, sl2, li, hbase);
    }
#else
#pragma unroll 1
    for (int ib0 = 0; ib0 < trips; ib0 += NST * STEP) {     // rounds of NST steps (block-uniform trip count)
        KREG_CP_STEP(0)
#if KREG_NST > 1
        KREG_CP_STEP(1)
#endif
#if KREG_NST > 2
        KREG_CP_STEP(2)
#endif
#if KREG_NST > 3
        KREG_CP_STEP(3)
#endif
#if KREG_NST > 4
        KREG_CP_STEP(4)
#endif
#if KREG_NST > 5
        KREG_CP_STEP(5)
#endif
#if KREG_NST > 6
        KREG_CP_STEP(6)
#endif
#if KREG_NST > 7
        KREG_CP_STEP(7)
#endif
    }
#endif
    asm volatile("cp.async.wait_all;" ::: "memory");        // the last (zero-filled) copies land before exit
    static_assert(NST <= 8, "KREG_CP_STEP is spelled out for 8 stages");

#if KREG_FLOOR
    if (threadIdx.x < D) o_part[((long long)p * Hq + h0) * D + threadIdx.x] = __uint_as_float(st.fl & 0x3fffffffu);
    if (threadIdx.x == 0) lse_part[(long long)p * Hq + h0] = 0.f;
    for (int h = 1; h < nh; h++) {
        if (threadIdx.x < D) o_part[((long long)p * Hq + h0 + h) * D + threadIdx.x] = 0.f;
        if (threadIdx.x == 0) lse_part[(long long)p * Hq + h0 + h] = 0.f;
    }
#else
    // each head's weight sum over its 4 lanes (every lane of the half-warp gets every head's)
    float lsum = st.lw + __shfl_xor_sync(0xffffffffu, st.lw, 1);
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
    // the two half-warps (same dims, other positions) merge into the lower one, which writes shared memory
#pragma unroll
    for (int h = 0; h < HB; h++) {
        float m = __shfl_sync(0xffffffffu, st.mh, hbase + h * U), l = __shfl_sync(0xffffffffu, lsum, hbase + h * U);
        const float om = __shfl_xor_sync(0xffffffffu, m, 16), ol = __shfl_xor_sync(0xffffffffu, l, 16);
        float oacc[8];
#pragma unroll
        for (int i = 0; i < 8; i++) oacc[i] = __shfl_xor_sync(0xffffffffu, st.acc[h][i], 16);
        if (half == 0) {
            merge(m, l, st.acc[h], om, ol, oacc);
            float4* dst = reinterpret_cast<float4*>(&red_acc[h][warp][d0]);
            dst[0] = make_float4(st.acc[h][0], st.acc[h][1], st.acc[h][2], st.acc[h][3]);
            dst[1] = make_float4(st.acc[h][4], st.acc[h][5], st.acc[h][6], st.acc[h][7]);
            if (lane == 0) red_ml[h][warp] = make_float2(m, l);
        }
    }
    __syncthreads();

    const int t = threadIdx.x;                   // this thread owns dim t of every head's row
#pragma unroll
    for (int h = 0; h < HB; h++) {
        if (h >= nh) break;
        const float4 a = reinterpret_cast<const float4*>(&red_ml[h][0])[0];    // (m, l) of warps 0, 1
        const float4 b = reinterpret_cast<const float4*>(&red_ml[h][0])[1];    // (m, l) of warps 2, 3
        const float wm[WARPS] = {a.x, a.z, b.x, b.z}, wl[WARPS] = {a.y, a.w, b.y, b.w};
        float mx = -KREG_INF;
#pragma unroll
        for (int w = 0; w < WARPS; w++) mx = fmaxf(mx, wm[w]);
        const float base = mx == -KREG_INF ? 0.f : mx;
        float l = 0.f, o = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            const float f = exp2f(wm[w] - base);
            l = fmaf(wl[w], f, l);
            o = fmaf(red_acc[h][w][t], f, o);
        }
        const long long row = (long long)p * Hq + h0 + h;
        o_part[row * D + t] = l > 0.f ? o / l : 0.f;
        if (t == 0) lse_part[row] = l > 0.f ? (mx + log2f(l)) * LN2 : -KREG_INF;
    }
#endif
}

#ifdef KREG_MAXREG
#define KREG_BOUNDS __maxnreg__(KREG_MAXREG)
#else
#define KREG_BOUNDS __launch_bounds__(128, KREG_MINB)
#endif
#define ENTRY(NAME, T)                                                                                             \
    extern "C" __global__ void KREG_BOUNDS NAME(                                                                   \
        const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,                    \
        const int* __restrict__ n, float scale, float* __restrict__ o_part, float* __restrict__ lse_part, int Hq, \
        int Hkv, int S, int P) {                                                                                   \
        if (KREG_PREF) prefetch_first(k_cache, v_cache, Hkv, S, P);   /* L2 hints only */                          \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                                \
        decode<T>(q, k_cache, v_cache, n, scale, o_part, lse_part, Hq, Hkv, S, P);                                 \
    }
ENTRY(attention_decode_bf16, __nv_bfloat16)
ENTRY(attention_decode_f16, __half)
