// Safe attention_decode_fused as two launches (entries attention_decode_split_{bf16,f16} then
// attention_merge_split_{bf16,f16}): the registered safe flash-decoding pair, verbatim
// (kernels/safe/attention_decode/attention_decode.cu in namespace split, kernels/safe/attention_merge/
// attention_merge.cu in namespace mrg: the same code, each proven as there), with the partials in the
// variant's scratch and the split count P = 33 in the yaml (choose_splits' P for the H100 and the Qwen3
// 0.6B / 4B / 8B heads; a constant, which the prover closes for all dims, where an expression of the dims
// exhausted its budget). One launch that merges in a
// thread-block cluster (kernels/unsafe/attention_decode_fused) needs the prover's cluster model first.
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"

namespace split {
#define KREG_INF __int_as_float(0x7f800000)

#ifndef KREG_U
#define KREG_U 4          // positions per half-warp per iteration (loads in flight)
#endif
#ifndef KREG_HB
#define KREG_HB 4         // query heads per block (the grid's x dim covers G in batches of HB)
#endif
#ifndef KREG_CYCLIC
#define KREG_CYCLIC 1     // split p takes positions p + i*P (else the chunk [p*C, p*C + C), C = cdiv(n, P))
#endif
#ifndef KREG_SPEC
#define KREG_SPEC 1       // (cyclic) the first rows' loads bounded by S, not n: issued before n arrives
#endif
#ifndef KREG_MINB
#define KREG_MINB 1       // blocks per SM the compiler must fit (a register cap: 65536 / (128 * MINB))
#endif
constexpr int U = KREG_U, HB = KREG_HB, WARPS = 4, HALVES = 2 * WARPS, D = 128;
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

// Online-softmax state of one lane for one query head: max and weight sum (base 2), its 8 dims of sum w*v.
struct State {
    float m, l, acc[8];
};

// Merge b into a: both rescaled to the larger max (an all-empty pair stays empty, never NaN).
__device__ __forceinline__ void merge(State& a, float bm, float bl, const float* bacc) {
    float mx = fmaxf(a.m, bm);
    float base = mx == -KREG_INF ? 0.f : mx;
    float fa = exp2f(a.m - base), fb = exp2f(bm - base);
    a.m = mx;
    a.l = a.l * fa + bl * fb;
#pragma unroll
    for (int i = 0; i < 8; i++) a.acc[i] = a.acc[i] * fa + bacc[i] * fb;
}

// The K and V row slices (16 bytes each, packed) of the U positions j, j+ps, .., j+(U-1)*ps of KV head g.
// Cyclic splits: each position clamped to end - 1 (a row at or past n is read in bounds and masked by the
// caller; no branch around the loads, so the prover's summary of the loop that holds them stays linear);
// chunked: zeros at or past end.
template <class T>
__device__ __forceinline__ void rows(uint4* kr, uint4* vr, const T* __restrict__ kc, const T* __restrict__ vc,
                                     int j, int ps, int end, int Hkv, int g, int d0) {
#pragma unroll
    for (int u = 0; u < U; u++) {
#if KREG_CYCLIC
        const long long row = ((long long)min(j + u * ps, end - 1) * Hkv + g) * D + d0;
        kr[u] = kreg::load_raw<T>(kc + row);
        vr[u] = kreg::load_raw<T>(vc + row);
#else
        kr[u] = vr[u] = make_uint4(0u, 0u, 0u, 0u);
        if (j + u * ps < end) {
            const long long row = ((long long)(j + u * ps) * Hkv + g) * D + d0;
            kr[u] = kreg::load_raw<T>(kc + row);
            vr[u] = kreg::load_raw<T>(vc + row);
        }
#endif
    }
}

template <class T>
__device__ __forceinline__ void decode(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                       const int* __restrict__ n_ptr, float scale, float* __restrict__ o_part,
                                       float* __restrict__ lse_part, int Hq, int Hkv, int S, int P) {
    __shared__ __align__(16) float red_acc[HB][WARPS][D];
    __shared__ __align__(16) float2 red_ml[HB][WARPS];        // (max, weight sum) per head and warp
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, half = lane >> 4, d0 = (lane & 15) * 8;
    const int G = (int)((unsigned)Hq / (unsigned)Hkv), p = blockIdx.y, g = blockIdx.z;
    const int h0 = g * G + blockIdx.x * HB;                 // first query head of this block
    const int nh = min(HB, G - (int)blockIdx.x * HB);       // heads of this block (>= 1)
    const int n = n_ptr[0];
#if KREG_CYCLIC
    // split p: positions p, p + P, p + 2P, ..; the addresses do not depend on n, so the first rows' loads
    // (bounded by S) go out with the load of n, and n only masks
    const int start = p, ps = P, pre_end = KREG_SPEC ? S : n, end = n;
    // the split's positions: with n = (Q - 1) P + r, 1 <= r <= P, splits p < r take Q, the others Q - 1.
    // Every block runs the loop over Q indices and masks those at or past its count: the loop's exit and
    // the loads (clamped, unguarded) then hold no per-block division and no product with the loop count,
    // which is what keeps the prover's cross-block queries small (all dims in ~11-17 s of solver work;
    // a j-stepped loop, guarded loads or a per-block count left race_free at the named cases)
    const int Q = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P), r = n - (Q - 1) * P;
    const int cnt = p < r ? Q : Q - 1, trips = Q;
#else
    const int C = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P);     // n >= 1, P >= 1
    const int start = min(n, p * C), ps = 1, end = min(n, start + C), pre_end = end, cnt = end - start, trips = cnt;
#endif
    const float sl2 = scale * LOG2E;

    kreg::F8 qv[HB];
    State st[HB];
#pragma unroll
    for (int h = 0; h < HB; h++) {
        if (h < nh) qv[h] = kreg::load8<T>(q + (long long)(h0 + h) * D + d0);
        else
#pragma unroll
            for (int i = 0; i < 8; i++) qv[h].v[i] = 0.f;
        st[h].m = -KREG_INF;
        st[h].l = 0.f;
#pragma unroll
        for (int i = 0; i < 8; i++) st[h].acc[i] = 0.f;
    }

    // rows of the next iteration are loaded before this one's arithmetic (kept packed: 4 registers a
    // row slice), so every warp has loads in flight while it computes
    // (the loop runs over the split's index i, position start + i*ps, in constant steps)
    const int step = HALVES * U;
    int i0 = warp * 2 * U;
    uint4 kr[U], vr[U];
    rows<T>(kr, vr, kc, vc, start + (i0 + half * U) * ps, ps, pre_end, Hkv, g, d0);
#pragma unroll 1
    for (; i0 < trips; i0 += step) {                          // warp-uniform trip count
        uint4 kn[U], vn[U];
        rows<T>(kn, vn, kc, vc, start + (i0 + step + half * U) * ps, ps, end, Hkv, g, d0);
        bool ok[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            ok[u] = i0 + half * U + u < cnt;
            if (!ok[u]) vr[u] = make_uint4(0u, 0u, 0u, 0u);   // a row loaded past n (any bits) weighs 0 * 0
        }
#pragma unroll
        for (int h = 0; h < HB; h++) {
            float s[U];
            float mx = st[h].m;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const kreg::F8 kv = kreg::unpack8<T>(kr[u]);
                float d = 0.f;
#pragma unroll
                for (int i = 0; i < 8; i++) d = fmaf(qv[h].v[i], kv.v[i], d);
#pragma unroll
                for (int o = 8; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);   // within the half-warp
                s[u] = ok[u] ? d * sl2 : -KREG_INF;
                mx = fmaxf(mx, s[u]);
            }
            const float base = mx == -KREG_INF ? 0.f : mx;
            const float corr = exp2f(st[h].m - base);
            st[h].m = mx;
            st[h].l *= corr;
#pragma unroll
            for (int i = 0; i < 8; i++) st[h].acc[i] *= corr;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const float w = exp2f(s[u] - base);
                const kreg::F8 vv = kreg::unpack8<T>(vr[u]);
                st[h].l += w;
#pragma unroll
                for (int i = 0; i < 8; i++) st[h].acc[i] = fmaf(w, vv.v[i], st[h].acc[i]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            kr[u] = kn[u];
            vr[u] = vn[u];
        }
    }

    // the two half-warps (same dims, other positions) merge into the lower one, which writes shared memory
#pragma unroll
    for (int h = 0; h < HB; h++) {
        float om = __shfl_xor_sync(0xffffffffu, st[h].m, 16), ol = __shfl_xor_sync(0xffffffffu, st[h].l, 16);
        float oacc[8];
#pragma unroll
        for (int i = 0; i < 8; i++) oacc[i] = __shfl_xor_sync(0xffffffffu, st[h].acc[i], 16);
        if (half == 0) {
            merge(st[h], om, ol, oacc);
            float4* dst = reinterpret_cast<float4*>(&red_acc[h][warp][d0]);
            dst[0] = make_float4(st[h].acc[0], st[h].acc[1], st[h].acc[2], st[h].acc[3]);
            dst[1] = make_float4(st[h].acc[4], st[h].acc[5], st[h].acc[6], st[h].acc[7]);
            if (lane == 0) red_ml[h][warp] = make_float2(st[h].m, st[h].l);
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
}
}  // namespace split

namespace mrg {
constexpr int WARPS = 8, D = 128, U = 9;   // splits per warp per iteration (loads in flight together): P <= 72 in one pass

template <class T>
__device__ __forceinline__ void merge(const float* __restrict__ o_part, const float* __restrict__ lse_part,
                                      T* __restrict__ out, int Hq, int P) {
    __shared__ __align__(16) float red_o[WARPS][D];
    __shared__ float red_m[WARPS], red_l[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, h = blockIdx.x;
    float m = -KREG_INF, l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
    for (int p0 = warp; p0 < P; p0 += WARPS * U) {
        int pb = p0;
        asm volatile("" : "+r"(pb));      // opaque to the compiler: rows are computed from p each iteration,
        float lse[U];                     // not strength-reduced into pointer steps computed in the loop
        float4 o[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int p = pb + WARPS * u;
            lse[u] = -KREG_INF;
            o[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (p < P) {
                const long long row = (long long)p * Hq + h;
                lse[u] = lse_part[row];
                o[u] = *reinterpret_cast<const float4*>(o_part + row * D + lane * 4);
            }
        }
        float mx = m;
#pragma unroll
        for (int u = 0; u < U; u++) mx = fmaxf(mx, lse[u]);
        const float base = mx == -KREG_INF ? 0.f : mx;
        const float corr = expf(m - base);                  // 0 while nothing was seen (m = -inf)
        m = mx;
        l *= corr;
        acc.x *= corr;
        acc.y *= corr;
        acc.z *= corr;
        acc.w *= corr;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const bool live = lse[u] != -KREG_INF;
            const float w = live ? expf(lse[u] - base) : 0.f;
            l += w;
            acc.x = live ? fmaf(w, o[u].x, acc.x) : acc.x;
            acc.y = live ? fmaf(w, o[u].y, acc.y) : acc.y;
            acc.z = live ? fmaf(w, o[u].z, acc.z) : acc.z;
            acc.w = live ? fmaf(w, o[u].w, acc.w) : acc.w;
        }
    }
    *reinterpret_cast<float4*>(&red_o[warp][lane * 4]) = acc;
    if (lane == 0) {
        red_m[warp] = m;
        red_l[warp] = l;
    }
    __syncthreads();
    const int t = threadIdx.x;
    if (t < D) {
        float mx = -KREG_INF;
#pragma unroll
        for (int w = 0; w < WARPS; w++) mx = fmaxf(mx, red_m[w]);
        const float base = mx == -KREG_INF ? 0.f : mx;
        float o = 0.f, tot = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            const float f = expf(red_m[w] - base);          // 0 for a warp that saw no live split
            o = fmaf(red_o[w][t], f, o);
            tot = fmaf(red_l[w], f, tot);
        }
        out[(long long)h * D + t] = kreg::Cvt<T>::from(o / tot);
    }
}
}  // namespace mrg

#define ENTRY(NAME, MNAME, T)                                                                                    \
    extern "C" __global__ void __launch_bounds__(128, KREG_MINB) NAME(                                           \
        const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,                  \
        const int* __restrict__ n, float scale, float* __restrict__ o_part, float* __restrict__ lse_part, int Hq, \
        int Hkv, int S, int P) {                                                                                 \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                              \
        split::decode<T>(q, k_cache, v_cache, n, scale, o_part, lse_part, Hq, Hkv, S, P);                          \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(256) MNAME(const float* __restrict__ o_part,                      \
                                                            const float* __restrict__ lse_part, T* __restrict__ out, \
                                                            int Hq, int P) {                                      \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                              \
        mrg::merge<T>(o_part, lse_part, out, Hq, P);                                                             \
    }
ENTRY(attention_decode_split_bf16, attention_merge_split_bf16, __nv_bfloat16)
ENTRY(attention_decode_split_f16, attention_merge_split_f16, __half)
