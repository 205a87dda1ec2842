// Unsafe flash-decoding split (entries attention_decode_bf16, attention_decode_f16; registered as
// attention_decode_*_x4). Ownership and arithmetic as the safe kernel
// (kernels/safe/attention_decode/attention_decode.cu: cyclic splits, the first stages' copies issued
// before n arrives), but the K/V rows go through shared memory: half-warp f (of 8) takes split indices
// i + f*U + u, u < U, of each stage of 8U; lane l copies the 16-byte
// slices l*8 .. l*8+7 of those K and V rows with cp.async into shared slots that only it reads back (no
// barrier: each thread waits for its own copies), zero-filled past the split's end. NST stages rotate: a
// stage is read while NST - 1 land (cp.async.wait_group NST - 2 at the loop top), and the registers hold
// no K/V rows (~124 registers). With NST = 2 (it & 1 for the stage) and the earlier chunked splits the
// prover closed it for all dims, but in ~3x the time of the safe kernel (20-35 s on a loaded machine: too close to the 30 s budget to
// register it safe); it was 2-3% faster than the safe kernel on the H100, NST = 3 (U = 3) a little more.
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"

#define KREG_INF __int_as_float(0x7f800000)

#ifndef KREG_U
#define KREG_U 3          // positions per half-warp per stage (12 KB a stage per block at U = 3)
#endif
#ifndef KREG_NST
#define KREG_NST 3        // stages
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
#define KREG_MINB 4       // blocks per SM the compiler must fit (a register cap: 65536 / (128 * MINB))
#endif
constexpr int U = KREG_U, HB = KREG_HB, WARPS = 4, HALVES = 2 * WARPS, D = 128, NT = 32 * WARPS;
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

// One 16-byte cp.async (zero-filled when !valid: src is then not read).
__device__ __forceinline__ void cp16(void* smem, const void* src, bool valid) {
    unsigned d = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(src), "r"(valid ? 16 : 0));
}

// This thread's K and V slices of the U positions j, j+ps, .., j+(U-1)*ps of KV head g into its slots of
// stage buf (zeros for positions at or past end), as one commit group.
template <class T>
__device__ __forceinline__ void stage_copy(uint4 (*buf)[2][NT], const T* __restrict__ kc, const T* __restrict__ vc,
                                           int j, int ps, int end, int Hkv, int g, int d0) {
#pragma unroll
    for (int u = 0; u < U; u++) {
        const bool valid = j + u * ps < end;
        const long long row = valid ? ((long long)(j + u * ps) * Hkv + g) * D + d0 : 0;
        cp16(&buf[u][0][threadIdx.x], kc + row, valid);
        cp16(&buf[u][1][threadIdx.x], vc + row, valid);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// The online-softmax update of every head of this thread with the U positions j, j+ps, .. of stage buf
// (positions at or past end masked out, their V slices zeroed: a slot loaded past n holds any bits): all scores first (one K slice unpacked at a time), then the
// rescale, then the V slices (one at a time), so few registers stay live.
template <class T>
__device__ __forceinline__ void stage_math(State* st, const kreg::F8* qv, uint4 (*buf)[2][NT], int j, int ps,
                                           int end, float sl2) {
    float s[HB][U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const kreg::F8 kv = kreg::unpack8<T>(buf[u][0][threadIdx.x]);
        const bool ok = j + u * ps < end;
#pragma unroll
        for (int h = 0; h < HB; h++) {
            float d = 0.f;
#pragma unroll
            for (int i = 0; i < 8; i++) d = fmaf(qv[h].v[i], kv.v[i], d);
#pragma unroll
            for (int o = 8; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);   // within the half-warp
            s[h][u] = ok ? d * sl2 : -KREG_INF;
        }
    }
    float base[HB];
#pragma unroll
    for (int h = 0; h < HB; h++) {
        float mx = st[h].m;
#pragma unroll
        for (int u = 0; u < U; u++) mx = fmaxf(mx, s[h][u]);
        base[h] = mx == -KREG_INF ? 0.f : mx;
        const float corr = exp2f(st[h].m - base[h]);
        st[h].m = mx;
        st[h].l *= corr;
#pragma unroll
        for (int i = 0; i < 8; i++) st[h].acc[i] *= corr;
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const uint4 vraw = buf[u][1][threadIdx.x];
        const kreg::F8 vv = kreg::unpack8<T>(j + u * ps < end ? vraw : make_uint4(0u, 0u, 0u, 0u));
#pragma unroll
        for (int h = 0; h < HB; h++) {
            const float w = exp2f(s[h][u] - base[h]);
            st[h].l += w;
#pragma unroll
            for (int i = 0; i < 8; i++) st[h].acc[i] = fmaf(w, vv.v[i], st[h].acc[i]);
        }
    }
}

template <class T>
__device__ __forceinline__ void decode(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                       const int* __restrict__ n_ptr, float scale, float* __restrict__ o_part,
                                       float* __restrict__ lse_part, int Hq, int Hkv, int S, int P) {
    __shared__ __align__(16) uint4 stg[KREG_NST][U][2][NT];          // [stage][position][K, V][thread]: 16 B slots
    __shared__ __align__(16) float red_acc[HB][WARPS][D];
    __shared__ __align__(16) float2 red_ml[HB][WARPS];        // (max, weight sum) per head and warp
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, half = lane >> 4, d0 = (lane & 15) * 8;
    const int G = (int)((unsigned)Hq / (unsigned)Hkv), p = blockIdx.y, g = blockIdx.z;
    const int h0 = g * G + blockIdx.x * HB;                 // first query head of this block
    const int nh = min(HB, G - (int)blockIdx.x * HB);       // heads of this block (>= 1)
    const int n = n_ptr[0];
#if KREG_CYCLIC
    // split p: positions p, p + P, p + 2P, ..; the first stages' addresses do not depend on n (bounded by
    // S), so their copies go out with the load of n, and n only masks
    const int start = p, ps = P, pre_end = KREG_SPEC ? S : n, end = n;
#else
    const int C = (int)(((unsigned)n + (unsigned)P - 1u) / (unsigned)P);     // n >= 1, P >= 1
    const int start = min(n, p * C), ps = 1, end = min(n, start + C), pre_end = end;
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

    // iteration it reads stage it % 2 (positions j0 + half*U + u of this warp) while the copies of the
    // next 8U positions of the block land in the other stage
    const int step = HALVES * U * ps;
    int j0 = start + warp * 2 * U * ps;
#pragma unroll
    for (int i = 0; i < KREG_NST - 1; i++)
        stage_copy<T>(stg[i], kc, vc, j0 + i * step + half * U * ps, ps, pre_end, Hkv, g, d0);
#pragma unroll 1
    for (int it = 0; j0 < end; j0 += step, it++) {          // warp-uniform trip count
        asm volatile("cp.async.wait_group %0;" :: "n"(KREG_NST - 2) : "memory");
        stage_copy<T>(stg[(it + KREG_NST - 1) % KREG_NST], kc, vc, j0 + (KREG_NST - 1) * step + half * U * ps, ps,
                      end, Hkv, g, d0);
        stage_math<T>(st, qv, stg[it % KREG_NST], j0 + half * U * ps, ps, end, sl2);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");        // the last (zero-filled) stage lands before exit

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

#define ENTRY(NAME, T)                                                                                             \
    extern "C" __global__ void __launch_bounds__(128, KREG_MINB) NAME(                                                        \
        const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,                    \
        const int* __restrict__ n, float scale, float* __restrict__ o_part, float* __restrict__ lse_part, int Hq, \
        int Hkv, int S, int P) {                                                                                   \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                                \
        decode<T>(q, k_cache, v_cache, n, scale, o_part, lse_part, Hq, Hkv, S, P);                                    \
    }
ENTRY(attention_decode_bf16, __nv_bfloat16)
ENTRY(attention_decode_f16, __half)
