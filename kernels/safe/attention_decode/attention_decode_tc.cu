// Safe flash-decoding split on tensor cores (entries attention_decode_bf16, attention_decode_f16): the blocks,
// splits and outputs of attention_decode_rs.cu (read attention_decode.cu's header first), the scores and the
// weighted V sums as mma.sync m16n8k16 instead of per-lane dots and shuffles, so that the SMs' arithmetic
// hides under the K/V stream. Block (b, p, g) owns split p of KV head g for the query heads g*G + b*HB + h,
// h < min(HB, G - b*HB); warp w takes the split's indices i0 .. i0+7 (i0 = 32 it + 8 w), the rows of the
// next KREG_AHEAD - 1 iterations in flight while these are computed. Lane (r, c) = (lane / 4, lane % 4), the mma fragment coordinates:
//  - S^T = Q K^T with A = Q (rows: the block's heads, rows 4..15 zero) and B = K^T (n: the 8 positions):
//    lane (r, c) loads K row i0 + r, the 16-byte slices 8c + 32j (j < 4; 64 contiguous bytes of a row a
//    load instruction per 4 lanes), and those words are its B fragments as they are: the 128 dims are
//    permuted into the 8 k-steps (k-step s takes dims 32 (s/2) + 8c + 4 (s%2) + 0..3 of lane c), and Q's A
//    fragments, loaded once, use the same permutation (a dot product does not depend on the order).
//  - the C fragment leaves lane (r, c) the scores of head r at positions i0 + 2c, +1; the row max over the
//    8 positions is two shuffles; online softmax in fp32 (base 2) as attention_decode_rs.cu.
//  - O^T += P V with A = P (row r: head r's weights rounded to DT, row r + 8: the rest, P = hi + lo,
//    ~2^-16 relative as the prefill's) and B = V (k: positions 2c, 2c+1 of the 8; k 8..15 zero): lane
//    (r, c) loads V rows i0 + 2c, +1, the slices 8r and 64 + 8r; one prmt per word pairs the two rows'
//    elements of a dim (n-tile t: dim 8r + t, t < 8, or 64 + 8r + t - 8). C: lane (r, c) accumulates head
//    r's dims 16c .. 16c+15 and 64+16c .. +15, hi part in rows r, lo part in rows r + 8 (added at the end).
// Rows at or past the split's count are loaded clamped (as attention_decode_rs.cu) and masked: score -inf,
// V words zero. The warps then merge through shared memory as attention_decode_rs.cu does.
// Knobs: KREG_PREF=k hints the first k iterations' rows into the L2 before the PDL wait; KREG_LOOPMASK=0
// drops the masks inside the loop (an iteration with a later one holds indices below trips - 1 <= cnt only);
// KREG_AHEAD, KREG_QKC, KREG_LAZY, KREG_PRO, KREG_LDQ below. Registered (attention_decode_{bf16,f16}_tc):
// PREF=1, LOOPMASK=0, AHEAD=2, QKC=4, LAZY=8, LDQ=1; all four proofs for all dims in ~7 s of solver work
// (prover-0.13). H100, Qwen3-4B heads, the pair with attention_merge under PDL (bench/results/
// attention_decode_tc_dev.txt, 2026-11-24): 14.60-14.66 us at 8192 positions, 77.1-77.4% of copy (the rs
// pair 71.4-72.0%), 93.5-93.7% at 32768; 5.6 us at n = 640 of 4096 (rs 5.2-5.3). What made the difference:
// K/V loads that do not allocate in the L1 (ld.global.nc.L1::no_allocate: 15.07 -> 14.64 us; the stream is
// read once) and two iterations in registers; the tensor cores alone matched rs (the arithmetic was not
// the limit). Measured and not registered: one iteration in registers (74.5%), three (255 registers, no
// room for the merge block under PDL: 70%), the second iteration's rows before n arrives (KREG_PRO=1:
// 78.4%, but rows past n fetched at a short context: +1.1 us at n = 640), 256-byte L2 fetches (L2::256B,
// bench only: no gain), the second iteration hinted into the L2 (KREG_PREF=2: no gain). Builds that differ only in
// how the loop's test is written vary by ~0.3 us (ptxas); the registered form is the one the checker proves.
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"
#include "kreg_mma.cuh"
#include "kreg_stream.cuh"

#define KREG_INF __int_as_float(0x7f800000)

#ifndef KREG_PREF
#define KREG_PREF 0
#endif
#ifndef KREG_LOOPMASK
#define KREG_LOOPMASK 1
#endif
#ifndef KREG_AHEAD
#define KREG_AHEAD 2      // iterations whose rows are in registers (1 - 3): one computed, the rest in flight
#endif
#ifndef KREG_QKC
#define KREG_QKC 1        // the scores' 8 k-steps in 1, 2 or 4 accumulation chains (2, 4: shorter latency)
#endif
#ifndef KREG_LAZY
#define KREG_LAZY 0       // k > 0: rescale the sums only when a score passes the reference max by 2^k
#endif
#ifndef KREG_PRO
#define KREG_PRO 0        // the prologue's rows after the first iteration's clamped below n (0) or below S (1)
#endif
#ifndef KREG_LDQ
#define KREG_LDQ 0        // 1: the K/V loads do not allocate in the L1 (ld_kv)
#endif
#ifndef KREG_MINB
#define KREG_MINB 1
#endif
constexpr int HB = 4, WARPS = 4, D = 128, NP = 8;   // NP: positions a warp an iteration
enum { AH = KREG_AHEAD };
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

// min(i, end - 1) as unsigned values: in [0, end - 1] for any i (end >= 1), whatever the checker knows of i
__device__ __forceinline__ unsigned clamp_row(int i, int end) { return min((unsigned)i, (unsigned)(end - 1)); }

// 16 bytes of K or V: streamed past the L1 (KREG_LDQ=1, kreg_stream.cuh) or a plain load.
template <class T> __device__ __forceinline__ uint4 ld_kv(const T* __restrict__ p) {
    return KREG_LDQ ? kreg::load_raw_stream<T>(p) : kreg::load_raw<T>(p);
}

// This lane's K row (position pk) and V rows (pv, pv + ps) of an iteration, each position clamped to end - 1
// (a row at or past n is read in bounds and masked by the caller).
template <class T>
__device__ __forceinline__ void rows(uint4* kr, uint4* vr, const T* __restrict__ kc, const T* __restrict__ vc,
                                     int pk, int pv, int ps, int end, int Hkv, int g, int r, int c) {
    const long long krow = ((long long)clamp_row(pk, end) * Hkv + g) * D + 8 * c;
#pragma unroll
    for (int j = 0; j < 4; j++) kr[j] = ld_kv<T>(kc + krow + 32 * j);
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const long long vrow = ((long long)clamp_row(pv + e * ps, end) * Hkv + g) * D + 8 * r;
        vr[2 * e] = ld_kv<T>(vc + vrow);
        vr[2 * e + 1] = ld_kv<T>(vc + vrow + 64);
    }
}

// Before the PDL wait (no data reaches the program, checker/pdl.py): hint the L2 with the rows of this lane's
// first KREG_PREF iterations (their positions depend on the launch only, clamped below S).
__device__ __forceinline__ void prefetch_first(const void* kc, const void* vc, int Hkv, int S, int P) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = lane >> 2, c = lane & 3;
    const int p = blockIdx.y, g = blockIdx.z;
#pragma unroll
    for (int it = 0; it < KREG_PREF; it++) {
        const int i0 = it * WARPS * NP + warp * NP;
        kreg::prefetch_l2((const char*)kc + 2 * (((long long)min(p + (i0 + r) * P, S - 1) * Hkv + g) * D + 32 * c));
#pragma unroll
        for (int e = 0; e < 2; e++)
            kreg::prefetch_l2((const char*)vc + 2 * (((long long)min(p + (i0 + 2 * c + e) * P, S - 1) * Hkv + g) * D));
    }
}

struct State {
    float o[16][4];   // n-tile t: C fragment of O^T (hi rows r, lo rows r + 8)
    float mh, lw;     // head r's running max (base 2), this lane's weight sum
};

// One iteration over the rows kr, vr of indices ib .. ib+7 (valid below cnt). MASK false: all valid.
template <class T, bool MASK = true>
__device__ __forceinline__ void step(State& st, const uint4* qw, const uint4* kr, uint4* vr, int ib, int cnt,
                                     float sl2, int c) {
    float s[KREG_QKC][4];      // the scores' 8 k-steps in KREG_QKC accumulation chains (k-step k into chain k % QKC)
#pragma unroll
    for (int j = 0; j < KREG_QKC; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const uint4 q4 = qw[k >> 1], k4 = kr[k >> 1];
        const unsigned a[4] = {k & 1 ? q4.z : q4.x, 0u, k & 1 ? q4.w : q4.y, 0u};
        Mma<T>::run(s[k % KREG_QKC], a, k & 1 ? k4.z : k4.x, k & 1 ? k4.w : k4.y);
    }
#pragma unroll
    for (int j = 1; j < KREG_QKC; j++) {
        s[0][0] += s[j][0];
        s[0][1] += s[j][1];
    }
    const bool ok0 = !MASK || ib + 2 * c < cnt, ok1 = !MASK || ib + 2 * c + 1 < cnt;
    const float s0 = ok0 ? s[0][0] * sl2 : -KREG_INF, s1 = ok1 ? s[0][1] * sl2 : -KREG_INF;
    float mx = fmaxf(s0, s1);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
#if KREG_LAZY
    // the weights stay relative to the head's reference max mh until a score passes it by 2^KREG_LAZY
    // (weights up to 2^KREG_LAZY, exact enough in fp32 and in P = hi + lo); only then (a warp vote) are
    // the sums rescaled to a new reference
    if (__any_sync(0xffffffffu, mx > st.mh + (float)KREG_LAZY)) {
        const float mn = fmaxf(mx, st.mh), b = mn == -KREG_INF ? 0.f : mn, corr = exp2f(st.mh - b);
        st.mh = mn;
        st.lw *= corr;
#pragma unroll
        for (int t = 0; t < 16; t++)
#pragma unroll
            for (int i = 0; i < 4; i++) st.o[t][i] *= corr;
    }
    const float base = st.mh == -KREG_INF ? 0.f : st.mh;
    const float w0 = exp2f(s0 - base), w1 = exp2f(s1 - base);
    st.lw += w0 + w1;
#else
    mx = fmaxf(mx, st.mh);
    const float base = mx == -KREG_INF ? 0.f : mx;
    const float corr = exp2f(st.mh - base), w0 = exp2f(s0 - base), w1 = exp2f(s1 - base);
    st.mh = mx;
    st.lw = fmaf(st.lw, corr, w0 + w1);
#endif
    const unsigned hi = kreg::Cvt<T>::pack(w0, w1);
    const float2 rh = kreg::Cvt<T>::unpack(hi);
    const unsigned a[4] = {hi, kreg::Cvt<T>::pack(w0 - rh.x, w1 - rh.y), 0u, 0u};
    if (MASK) {
        if (!ok0) vr[0] = vr[1] = make_uint4(0u, 0u, 0u, 0u);   // a row past n (any bits) weighs 0 * 0
        if (!ok1) vr[2] = vr[3] = make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int t = 0; t < 16; t++) {
#if !KREG_LAZY
#pragma unroll
        for (int i = 0; i < 4; i++) st.o[t][i] *= corr;
#endif
        const uint4 x = vr[t >> 3 ? 1 : 0], y = vr[t >> 3 ? 3 : 2];
        const int w = (t & 7) >> 1;
        const unsigned xw = w == 0 ? x.x : w == 1 ? x.y : w == 2 ? x.z : x.w;
        const unsigned yw = w == 0 ? y.x : w == 1 ? y.y : w == 2 ? y.z : y.w;
        Mma<T>::run(st.o[t], a, __byte_perm(xw, yw, t & 1 ? 0x7632 : 0x5410), 0u);
    }
}

template <class T>
__device__ __forceinline__ void decode(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                       const int* __restrict__ n_ptr, float scale, float* __restrict__ o_part,
                                       float* __restrict__ lse_part, int Hq, int Hkv, int S, int P) {
    __shared__ __align__(16) float red_acc[HB][WARPS][D];
    __shared__ __align__(16) float2 red_ml[HB][WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = lane >> 2, c = lane & 3;
    const int G = (int)((unsigned)Hq / (unsigned)Hkv), p = blockIdx.y, g = blockIdx.z;
    const int h0 = g * G + blockIdx.x * HB;
    const int nh = min(HB, G - (int)blockIdx.x * HB);
    const int n = n_ptr[0];
    const int Q = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P), rem = n - (Q - 1) * P;
    const int cnt = p < rem ? Q : Q - 1, trips = Q;
    const float sl2 = scale * LOG2E;

    uint4 qw[4];      // Q's A fragments: head r's 16-byte slices 8c + 32j (zero for rows past the block's heads)
    const T* qrow = q + (long long)(h0 + min(r, nh - 1)) * D + 8 * c;      // (a select, not a branch, past nh)
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint4 x = kreg::load_raw<T>(qrow + 32 * j);
        qw[j] = make_uint4(r < nh ? x.x : 0u, r < nh ? x.y : 0u, r < nh ? x.z : 0u, r < nh ? x.w : 0u);
    }
    State st;
#pragma unroll
    for (int t = 0; t < 16; t++)
#pragma unroll
        for (int i = 0; i < 4; i++) st.o[t][i] = 0.f;
    st.mh = -KREG_INF;
    st.lw = 0.f;

    const int step_i = WARPS * NP;
    int i0 = warp * NP;
    // AH iterations' rows in registers: b[0] is computed while b[1..AH-1] and the row loads of the
    // iteration after them are in flight; the first iteration's rows are bounded by S (issued before n
    // arrives), the others' clamped below n (KREG_PRO=1: below S, also before n, but at a short context
    // they fetch rows past n)
    uint4 kb[AH][4], vb[AH][4];
#pragma unroll
    for (int a = 0; a < AH; a++)
        rows<T>(kb[a], vb[a], kc, vc, p + (i0 + a * step_i + r) * P, p + (i0 + a * step_i + 2 * c) * P, P,
                a == 0 || KREG_PRO ? S : n, Hkv, g, r, c);
    // the loop runs while an iteration after the AH in registers exists; its test also bounds i0 below 2^24
    // (true: i0 < trips <= n), which the checker needs to rule out wrap-around across iterations (and which
    // ptxas compiles better than a test on a counter of its own: bench/results/attention_decode_tc_dev.txt)
#pragma unroll 1
    for (; i0 + AH * step_i < trips && i0 < (1 << 24); i0 += step_i) {
        uint4 kx[4], vx[4];
        rows<T>(kx, vx, kc, vc, p + (i0 + AH * step_i + r) * P, p + (i0 + AH * step_i + 2 * c) * P, P, n, Hkv, g, r, c);
        step<T, KREG_LOOPMASK>(st, qw, kb[0], vb[0], i0, cnt, sl2, c);
#pragma unroll
        for (int j = 0; j < 4; j++) {
#pragma unroll
            for (int a = 0; a + 1 < AH; a++) {
                kb[a][j] = kb[a + 1][j];
                vb[a][j] = vb[a + 1][j];
            }
            kb[AH - 1][j] = kx[j];
            vb[AH - 1][j] = vx[j];
        }
    }
#pragma unroll
    for (int a = 0; a < AH; a++) step<T>(st, qw, kb[a], vb[a], i0 + a * step_i, cnt, sl2, c);

    // head r's weight sum over its 4 lanes; lanes 4r + c (r < HB) put their 32 dims of head r (16c .. 16c+15
    // and 64+16c .. +15) into shared memory, lane h < HB the (max, sum) of head h (from lane 4h)
    float lsum = st.lw + __shfl_xor_sync(0xffffffffu, st.lw, 1);
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
    const float hm = __shfl_sync(0xffffffffu, st.mh, 4 * (lane & (HB - 1))), hl = __shfl_sync(0xffffffffu, lsum, 4 * (lane & (HB - 1)));
    if (r < HB) {
#pragma unroll
        for (int half = 0; half < 2; half++)
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float4* dst = reinterpret_cast<float4*>(&red_acc[r][warp][64 * half + 16 * c]);     // dims 64 half + 16c + 4k .. +3: n-tiles 8 half + (4k & 7) .., c0 or c1
                const int t0 = 8 * half + (4 * k & 7), i = k >> 1;
                dst[k] = make_float4(st.o[t0][i] + st.o[t0][i + 2], st.o[t0 + 1][i] + st.o[t0 + 1][i + 2],
                                                st.o[t0 + 2][i] + st.o[t0 + 2][i + 2], st.o[t0 + 3][i] + st.o[t0 + 3][i + 2]);
            }
    }
    if (lane < HB) red_ml[lane][warp] = make_float2(hm, hl);
    __syncthreads();

    const int t = threadIdx.x;                   // this thread owns dim t of every head's row
#pragma unroll
    for (int h = 0; h < HB; h++) {
        if (h >= nh) break;
        const float4 a = reinterpret_cast<const float4*>(&red_ml[h][0])[0];
        const float4 b = reinterpret_cast<const float4*>(&red_ml[h][0])[1];
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
}

#define ENTRY(NAME, T)                                                                                             \
    extern "C" __global__ void __launch_bounds__(128, KREG_MINB) NAME(                                             \
        const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,                    \
        const int* __restrict__ n, float scale, float* __restrict__ o_part, float* __restrict__ lse_part, int Hq, \
        int Hkv, int S, int P) {                                                                                   \
        if (KREG_PREF) prefetch_first(k_cache, v_cache, Hkv, S, P);   /* L2 hints only */                          \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                                \
        decode<T>(q, k_cache, v_cache, n, scale, o_part, lse_part, Hq, Hkv, S, P);                                 \
    }
ENTRY(attention_decode_bf16, __nv_bfloat16)
ENTRY(attention_decode_f16, __half)
