// Safe flash-decoding merge (entries attention_merge_bf16, attention_merge_f16). Block h owns row h of
// out. Warp w takes the splits p = w + WARPS * i, U of them per iteration, and issues the loads of their
// lse_part entries and o_part rows together (lane l: dims 4l .. 4l+3, one 16-byte load), so a merge of
// P <= WARPS * U splits costs one memory round trip. Each warp keeps an online softmax of its splits
// (running max m, weight sum l, weighted row sum; base e): weight w_p = exp(lse_p - m); a split with
// lse = -inf gets weight 0 and its row (read, in bounds) is selected away, never multiplied (no NaN from
// whatever it holds). The warps' (m, l, sums) meet in shared memory after one barrier; thread t < 128
// rescales them to the common max in a fixed order and owns out[h, t]. 4 warps (128 threads, 64
// registers: P <= 36 in one round trip): under PDL the merge's blocks then fit on an SM beside two
// decode blocks and wait there (15.81 vs 16.80 us per Qwen3-4B pair at 8192 on the H100 with 8 warps,
// bench/results/attention_decode_dev_run1.txt).
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"

#define KREG_INF __int_as_float(0x7f800000)

#ifndef KREG_U
#define KREG_U 9          // splits per warp per iteration (their loads in flight together): P <= 72 in one pass
#endif
#ifndef KREG_WARPS
#define KREG_WARPS 4      // warps per block (the launch's block: 32 * KREG_WARPS threads)
#endif
constexpr int WARPS = KREG_WARPS, D = 128, U = KREG_U;

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

#define ENTRY(NAME, T)                                                                                             \
    extern "C" __global__ void __launch_bounds__(32 * KREG_WARPS) NAME(const float* __restrict__ o_part,              \
                                                           const float* __restrict__ lse_part, T* __restrict__ out, \
                                                           int Hq, int P) {                                         \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                                \
        merge<T>(o_part, lse_part, out, Hq, P);                                                                    \
    }
ENTRY(attention_merge_bf16, __nv_bfloat16)
ENTRY(attention_merge_f16, __half)
