// Unsafe fused flash-decoding (entries attention_decode_fused_bf16, attention_decode_fused_f16): the
// safe split kernel (kernels/safe/attention_decode/attention_decode.cu: cyclic splits, the same
// ownership and arithmetic; its o_part / lse_part rows are written as there) followed, in the same
// launch, by the merge: a block that has written its partials fences them (__threadfence) and takes a
// ticket from counter[g * gridDim.x + blockIdx.x] (atomicAdd); the P-th ticket's block resets the
// counter to 0 and merges the P partials of its heads into out (as attention_merge: warp w owns head
// h0 + w, lane l dims 4l .. 4l+3). counter must hold zeros before the first launch (each launch leaves
// it so). One launch instead of two, no merge launch gap. Unsafe: the prover does not model the
// fence + ticket ordering (the merging block reads other blocks' writes of the same launch).
// -DKREG_PREF=k: the first k iterations' rows hinted into the L2 before the PDL wait. -DKREG_CL=8 (or 16):
// the P = KREG_CL splits of a head batch form one thread-block cluster and merge through distributed
// shared memory instead of the ticket (entries attention_decode_cluster_*: the op attention_decode_fused,
// no workspace; registered unsafe: the prover does not model clusters yet, it says unknown).
// On the H100 (Qwen3-4B heads, bench/results/attention_decode_fused_gpu.txt) both are slower than the
// two-launch pair: the ticket tail (fence, atomic, the last block's L2 reads of P partials) costs more than
// the merge launch (8192: 20.6 vs 18.5 us); a cluster holds at most 16 blocks, so P <= 16 splits, and
// 8 clusters of 16 x 256 threads do not fit at once (7 do: two waves) while 16 x 128 or 8 x 256 threads
// pack two blocks an SM or use 64 SMs (8192: 23.1 us at best).
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"

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
#ifndef KREG_MU
#define KREG_MU 17        // splits whose partials the merging warp loads together (P = 33: two round trips)
#endif
#ifndef KREG_PREF
#define KREG_PREF 0       // iterations of this thread's first K/V rows hinted into the L2 before the PDL wait
#endif
#ifndef KREG_MINB
#define KREG_MINB 1       // blocks per SM the compiler must fit (a register cap: 65536 / (128 * MINB))
#endif
#ifndef KREG_WARPS
#define KREG_WARPS 4      // warps per block
#endif
#ifndef KREG_CL
#define KREG_CL 0         // 0: the ticket merge; 8 or 16: a cluster of the P = KREG_CL blocks of a head batch merges
#endif                    // through distributed shared memory (16: the non-portable cluster size, opted in at launch)
constexpr int MU = KREG_MU, U = KREG_U, HB = KREG_HB, WARPS = KREG_WARPS, HALVES = 2 * WARPS, D = 128, NT = 32 * WARPS;
static_assert(HB <= WARPS && NT >= D, "the merging warps: one per head of the block; a thread per dim");
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

// Cluster helpers (sm_90): this block's rank in its cluster, the cluster barrier (arrive.release,
// wait.acquire: shared-memory writes before it are visible to the cluster's reads after it), and a
// 4-byte load from the shared memory of block `rank` of the cluster at this block's address of p.
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ float ld_cluster(const float* p, int rank) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p), ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}

// Before the PDL wait (no data reaches the program): hint the L2 with the rows of this thread's first
// KREG_PREF loop iterations (their positions depend on the launch only, clamped below S).
__device__ __forceinline__ void prefetch_first(const void* kc, const void* vc, int Hkv, int S, int P) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, half = lane >> 4;
    const int p = blockIdx.y, g = blockIdx.z, d0 = (lane & 15) * 8;   // every lane (no branch before the wait)
#pragma unroll
    for (int it = 0; it < KREG_PREF; it++)
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = it * HALVES * U + warp * 2 * U + half * U + u;
            const long long row = ((long long)min(p + i * P, S - 1) * Hkv + g) * D + d0;
            kreg::prefetch_l2((const char*)kc + 2 * row);
            kreg::prefetch_l2((const char*)vc + 2 * row);
        }
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
                                       float* __restrict__ lse_part, int* __restrict__ counter, T* __restrict__ out,
                                       int Hq, int Hkv, int S, int P) {
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

    const int t = threadIdx.x;                   // thread t < 128 owns dim t of every head's row
#if KREG_CL
    __shared__ float cl_o[HB][D], cl_lse[HB];    // this block's (split's) partials, read by the cluster
#endif
#pragma unroll
    for (int h = 0; h < HB; h++) {
        if (h >= nh || t >= D) break;
        float mx = -KREG_INF;
#pragma unroll
        for (int w = 0; w < WARPS; w++) mx = fmaxf(mx, red_ml[h][w].x);
        const float base = mx == -KREG_INF ? 0.f : mx;
        float l = 0.f, o = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            const float2 ml = red_ml[h][w];
            const float f = exp2f(ml.x - base);
            l = fmaf(ml.y, f, l);
            o = fmaf(red_acc[h][w][t], f, o);
        }
#if KREG_CL
        cl_o[h][t] = l > 0.f ? o / l : 0.f;
        if (t == 0) cl_lse[h] = l > 0.f ? (mx + log2f(l)) * LN2 : -KREG_INF;
#else
        const long long row = (long long)p * Hq + h0 + h;
        o_part[row * D + t] = l > 0.f ? o / l : 0.f;
        if (t == 0) lse_part[row] = l > 0.f ? (mx + log2f(l)) * LN2 : -KREG_INF;
#endif
    }
#if KREG_CL
    // the cluster is the P = KREG_CL splits of this head batch: after the cluster barrier (release /
    // acquire) thread t of block rank r merges the outputs t*KREG_CL + r, + KREG_CL*NT, .. of the nh*128
    // (spread over every block of the cluster), reading
    // every split's partial from its block's shared memory; a second barrier keeps every block (and its
    // shared memory) alive until all reads are done
    cluster_sync();
    const unsigned rank = cluster_rank();
    for (int idx = t * KREG_CL + (int)rank; idx < nh * D; idx += KREG_CL * NT) {
        const int h = idx / D, d = idx % D;
        float ls[KREG_CL], os[KREG_CL];
#pragma unroll
        for (int r = 0; r < KREG_CL; r++) {
            ls[r] = ld_cluster(&cl_lse[h], r);
            os[r] = ld_cluster(&cl_o[h][d], r);
        }
        float mx = -KREG_INF;
#pragma unroll
        for (int r = 0; r < KREG_CL; r++) mx = fmaxf(mx, ls[r]);
        float l = 0.f, acc = 0.f;
#pragma unroll
        for (int r = 0; r < KREG_CL; r++) {
            const bool live = ls[r] != -KREG_INF;
            const float w = live ? __expf(ls[r] - mx) : 0.f;
            l += w;
            acc = live ? fmaf(w, os[r], acc) : acc;
        }
        out[(long long)(h0 + h) * D + d] = kreg::Cvt<T>::from(acc / l);   // l >= 1: split 0 holds position 0
    }
    cluster_sync();
#else
    // ticket: every thread's partial writes are made visible at gpu scope, then thread 0 takes a ticket
    // of this (KV head, head batch); the block that takes the last one (all P partials written) merges
    __shared__ int is_last;
    __threadfence();
    __syncthreads();
    if (t == 0) {
        int* c = counter + (long long)g * gridDim.x + blockIdx.x;
        const int ticket = atomicAdd(c, 1);
        is_last = ticket == P - 1;
        if (ticket == P - 1) *c = 0;                         // every split has arrived: reset for the next launch
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    if (warp >= nh) return;
    // warp w merges head h0 + w, lane l dims 4l .. 4l+3: MU splits' loads in flight together (L2 hits;
    // ld.global.cg, since other blocks wrote them during this launch), online softmax in base e
    const int h = h0 + warp;
    float m = -KREG_INF, l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
    for (int p0 = 0; p0 < P; p0 += MU) {
        float lse[MU];
        float4 o[MU];
#pragma unroll
        for (int u = 0; u < MU; u++) {
            const int pp = p0 + u;
            lse[u] = -KREG_INF;
            o[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (pp < P) {
                const long long r = (long long)pp * Hq + h;
                lse[u] = __ldcg(lse_part + r);
                o[u] = __ldcg(reinterpret_cast<const float4*>(o_part + r * D + lane * 4));
            }
        }
        float mx = m;
#pragma unroll
        for (int u = 0; u < MU; u++) mx = fmaxf(mx, lse[u]);
        const float base = mx == -KREG_INF ? 0.f : mx;
        const float corr = __expf(m - base);
        m = mx;
        l *= corr;
        acc.x *= corr;
        acc.y *= corr;
        acc.z *= corr;
        acc.w *= corr;
#pragma unroll
        for (int u = 0; u < MU; u++) {
            const bool live = lse[u] != -KREG_INF;
            const float w = live ? __expf(lse[u] - base) : 0.f;
            l += w;
            acc.x = live ? fmaf(w, o[u].x, acc.x) : acc.x;
            acc.y = live ? fmaf(w, o[u].y, acc.y) : acc.y;
            acc.z = live ? fmaf(w, o[u].z, acc.z) : acc.z;
            acc.w = live ? fmaf(w, o[u].w, acc.w) : acc.w;
        }
    }
    const float inv = 1.f / l;                              // l >= 1: split 0 holds position 0 (n >= 1)
    T* dst = out + (long long)h * D + lane * 4;
    dst[0] = kreg::Cvt<T>::from(acc.x * inv);
    dst[1] = kreg::Cvt<T>::from(acc.y * inv);
    dst[2] = kreg::Cvt<T>::from(acc.z * inv);
    dst[3] = kreg::Cvt<T>::from(acc.w * inv);
#endif
}

#if KREG_CL
#define CLUSTER_DIMS __cluster_dims__(1, KREG_CL, 1)
#else
#define CLUSTER_DIMS
#endif
#define ENTRY(NAME, T)                                                                                           \
    extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(NT, KREG_MINB) NAME(                              \
        const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,                  \
        const int* __restrict__ n, float scale, float* __restrict__ o_part, float* __restrict__ lse_part,       \
        int* __restrict__ counter, T* __restrict__ out, int Hq, int Hkv, int S, int P) {                       \
        if (KREG_PREF) prefetch_first(k_cache, v_cache, Hkv, S, P);                                              \
        kreg::pdl_begin();                                                                                       \
        decode<T>(q, k_cache, v_cache, n, scale, o_part, lse_part, counter, out, Hq, Hkv, S, P);                 \
    }
ENTRY(attention_decode_fused_bf16, __nv_bfloat16)
ENTRY(attention_decode_fused_f16, __half)

#if KREG_CL
// The op attention_decode_fused's signature (no workspace): the cluster form, P = KREG_CL splits.
#define CENTRY(NAME, T)                                                                                          \
    extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(NT, KREG_MINB) NAME(                              \
        const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,                  \
        const int* __restrict__ n, float scale, T* __restrict__ out, int Hq, int Hkv, int S) {                  \
        if (KREG_PREF) prefetch_first(k_cache, v_cache, Hkv, S, KREG_CL);                                        \
        kreg::pdl_begin();                                                                                       \
        decode<T>(q, k_cache, v_cache, n, scale, nullptr, nullptr, nullptr, out, Hq, Hkv, S, KREG_CL);          \
    }
CENTRY(attention_decode_cluster_bf16, __nv_bfloat16)
CENTRY(attention_decode_cluster_f16, __half)
#endif
