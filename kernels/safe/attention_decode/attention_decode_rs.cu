// Safe flash-decoding split, leaner arithmetic (entries attention_decode_bf16, attention_decode_f16); the same
// blocks, splits, loads and outputs as attention_decode.cu (read its header first). Block (b, p, g) owns
// split p of KV head g for the query heads g*G + b*HB + h, h < min(HB, G - b*HB); half-warp f (of 8)
// reads the split's indices i = it*8U + f*U + u, u < U (U = HB = 4), lane l of it the 16-byte slice
// l*8 .. l*8+7 of those K and V rows (position p + i*P, clamped below n: a row at or past n is masked).
// Differences:
//  - the scores: each lane holds 16 partial dots (4 positions x 4 heads over its 8 dims); one butterfly
//    reduce-scatter over the half-warp (15 shuffles, not 64) leaves lane li the whole score of
//    (head li / 4, position li % 4), which computes its weight (one exp2, not 20); the 4 lanes of a head
//    agree on its running max (2 shuffles); the weights and the heads' rescale factors go back to every
//    lane by 20 indexed shuffles. Each lane keeps its own weight sum (of position li % 4's weights),
//    summed over the head's 4 lanes at the end.
//  - the last loop iteration is peeled: no loads of rows past the split's end are issued (the loop runs
//    while a next iteration exists; the final iteration computes after it, masked as every other one).
// The halves and warps then merge exactly as in attention_decode.cu (fixed order, identical bits on every
// launch). Knobs (the registered variants' YAML names theirs): KREG_PREF=1 hints the first iteration's rows
// into the L2 before the PDL wait; KREG_LOOPMASK=0 drops the index masks inside the loop (an iteration with
// a next one holds indices below trips - 1 <= cnt only); KREG_LAZY=1 skips the sums' rescale by a warp vote
// when no head's max moved (168 registers instead of 199: a third block then fits an SM, which loses under
// PDL at the engine's P); KREG_UL=8 loads 8 positions a half-warp an iteration (slower on the H100);
// KREG_MAXREG / KREG_MINB cap the registers; bench knobs: KREG_PFD (L2 hints further ahead, slower) and
// KREG_FLOOR=1 (the arithmetic replaced by an XOR of the loaded words, numerics meaningless: the memory
// pipeline alone). H100 figures: bench/results/attention_decode_dev_run*.txt.
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"

#define KREG_INF __int_as_float(0x7f800000)

#ifndef KREG_PREF
#define KREG_PREF 0       // the first KREG_PREF iterations' rows hinted into the L2 before the PDL wait
#endif
#ifndef KREG_MINB
#define KREG_MINB 1       // blocks per SM the compiler must fit (a register cap: 65536 / (128 * MINB))
#endif
#ifndef KREG_PFD
#define KREG_PFD 0        // (a bench knob) each iteration hints the L2 with the rows KREG_PFD iterations past the next
#endif
#ifndef KREG_LAZY
#define KREG_LAZY 0       // skip the rescale of the sums when no head's running max moved (a warp vote)
#endif
#ifndef KREG_LOOPMASK
#define KREG_LOOPMASK 1   // 0: no masking inside the loop (only the peeled last iteration can hold indices >= cnt)
#endif
#ifndef KREG_FLOOR
#define KREG_FLOOR 0      // (a bench knob) loads only: the arithmetic replaced by an XOR of the loaded words
#endif
#ifndef KREG_UL
#define KREG_UL 4         // positions a half-warp loads per iteration (its rows in flight): U or 2U
#endif
constexpr int U = 4, HB = 4, WARPS = 4, HALVES = 2 * WARPS, D = 128;
enum { UL = KREG_UL };   // (an enum: a constexpr int here would be emitted as a PTX global)
static_assert(U * HB == 16, "the reduce-scatter gives each of a half-warp's 16 lanes one (head, position) score");
static_assert(UL % U == 0, "an iteration's rows are scored U at a time");
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

// The K and V row slices (16 bytes each, packed) of the UL positions j, j+ps, .., each clamped to end - 1
// (a row at or past n is read in bounds and masked by the caller; no branch around the loads).
template <class T>
__device__ __forceinline__ void rows(uint4* kr, uint4* vr, const T* __restrict__ kc, const T* __restrict__ vc,
                                     int j, int ps, int end, int Hkv, int g, int d0) {
#pragma unroll
    for (int u = 0; u < UL; u++) {
        const long long row = ((long long)min(j + u * ps, end - 1) * Hkv + g) * D + d0;
        kr[u] = kreg::load_raw<T>(kc + row);
        vr[u] = kreg::load_raw<T>(vc + row);
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

template <class T>
__device__ __forceinline__ void decode(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                       const int* __restrict__ n_ptr, float scale, float* __restrict__ o_part,
                                       float* __restrict__ lse_part, int Hq, int Hkv, int S, int P) {
    __shared__ __align__(16) float red_acc[HB][WARPS][D];
    __shared__ __align__(16) float2 red_ml[HB][WARPS];        // (max, weight sum) per head and warp
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, half = lane >> 4, d0 = (lane & 15) * 8;
    const int li = lane & 15, hbase = lane & 16;
    const int G = (int)((unsigned)Hq / (unsigned)Hkv), p = blockIdx.y, g = blockIdx.z;
    const int h0 = g * G + blockIdx.x * HB;                 // first query head of this block
    const int nh = min(HB, G - (int)blockIdx.x * HB);       // heads of this block (>= 1)
    const int n = n_ptr[0];
    // split p: positions p, p + P, .. below n; Q indices i per block, masked at or past the split's count
    // (as attention_decode.cu: no per-block division in the loop's exit or the loads)
    const int Q = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P), r = n - (Q - 1) * P;
    const int cnt = p < r ? Q : Q - 1, trips = Q;
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

    // the next iteration's rows are loaded before this one's arithmetic; the loop runs while a next
    // iteration exists, the last one (masked like the others; all masked for a warp past the split) after it
    const int step_i = HALVES * UL;
    int i0 = warp * 2 * UL;
    uint4 kr[UL], vr[UL];
    rows<T>(kr, vr, kc, vc, p + (i0 + half * UL) * P, P, S, Hkv, g, d0);   // bounded by S: issued before n arrives
#pragma unroll 1
    for (; i0 + step_i < trips; i0 += step_i) {                            // warp-uniform trip count
        uint4 kn[UL], vn[UL];
        rows<T>(kn, vn, kc, vc, p + (i0 + step_i + half * UL) * P, P, n, Hkv, g, d0);
#if KREG_PFD
#pragma unroll
        for (int u = 0; u < UL; u++) {
            const long long row = ((long long)min(p + (i0 + (1 + KREG_PFD) * step_i + half * UL + u) * P, n - 1) * Hkv + g) * D + d0;
            kreg::prefetch_l2(kc + row);
            kreg::prefetch_l2(vc + row);
        }
#endif
#pragma unroll
        for (int b = 0; b < UL; b += U)      // (KREG_LOOPMASK 0: a loop iteration's indices are all below cnt:
            step<T, KREG_LOOPMASK>(st, qv, kr + b, vr + b, i0 + half * UL + b, cnt, sl2, li, hbase);  // i < trips - 1 <= cnt)
#pragma unroll
        for (int u = 0; u < UL; u++) {
            kr[u] = kn[u];
            vr[u] = vn[u];
        }
    }
#pragma unroll
    for (int b = 0; b < UL; b += U) step<T>(st, qv, kr + b, vr + b, i0 + half * UL + b, cnt, sl2, li, hbase);

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

#ifdef KREG_MAXREG      // a register cap (__maxnreg__): 2 blocks of 128 threads at <= 224 leave room for a merge block
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
