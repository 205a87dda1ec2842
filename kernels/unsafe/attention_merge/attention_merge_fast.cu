// Unsafe flash-decoding merge (entries attention_merge_bf16, attention_merge_f16): the safe merge (see
// kernels/safe/attention_merge/attention_merge.cu) with U = 8 splits per warp per iteration and no branch
// around a split's o_part row: an empty split (lse = -inf) gets weight exp(-inf) = 0 and its row, which
// attention_decode writes as 0, is read anyway (0 * 0), so all loads of an iteration issue together.
#include "kreg_own.cuh"
#include "kreg_pdl.cuh"

#define KREG_INF __int_as_float(0x7f800000)

constexpr int WARPS = 8, D = 128, U = 8;

template <class T>
__device__ __forceinline__ void merge(const float* __restrict__ o_part, const float* __restrict__ lse_part,
                                      T* __restrict__ out, int Hq, int P) {
    __shared__ float red_o[WARPS][D], red_l[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, h = blockIdx.x;
    float mx = -KREG_INF;
#pragma unroll 1
    for (int p0 = lane; p0 < P; p0 += 32 * U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int p = p0 + 32 * u;
            if (p < P) mx = fmaxf(mx, lse_part[(long long)p * Hq + h]);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float base = mx == -KREG_INF ? 0.f : mx;
    float l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 1
    for (int p0 = warp; p0 < P; p0 += WARPS * U) {
        float w[U];
        float4 o[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int p = p0 + WARPS * u;
            w[u] = 0.f;
            o[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (p < P) {
                const long long row = (long long)p * Hq + h;
                w[u] = expf(lse_part[row] - base);
                o[u] = *reinterpret_cast<const float4*>(o_part + row * D + lane * 4);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            l += w[u];
            acc.x = fmaf(w[u], o[u].x, acc.x);
            acc.y = fmaf(w[u], o[u].y, acc.y);
            acc.z = fmaf(w[u], o[u].z, acc.z);
            acc.w = fmaf(w[u], o[u].w, acc.w);
        }
    }
    red_o[warp][lane * 4 + 0] = acc.x;
    red_o[warp][lane * 4 + 1] = acc.y;
    red_o[warp][lane * 4 + 2] = acc.z;
    red_o[warp][lane * 4 + 3] = acc.w;
    if (lane == 0) red_l[warp] = l;
    __syncthreads();
    const int t = threadIdx.x;
    if (t < D) {
        float o = 0.f, tot = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            o += red_o[w][t];
            tot += red_l[w];
        }
        out[(long long)h * D + t] = kreg::Cvt<T>::from(o / tot);
    }
}

#define ENTRY(NAME, T)                                                                                             \
    extern "C" __global__ void __launch_bounds__(256) NAME(const float* __restrict__ o_part,                       \
                                                           const float* __restrict__ lse_part, T* __restrict__ out, \
                                                           int Hq, int P) {                                         \
        kreg::pdl_begin();   /* PDL: wait first (checker/pdl.py) */                                                \
        merge<T>(o_part, lse_part, out, Hq, P);                                                                    \
    }
ENTRY(attention_merge_bf16, __nv_bfloat16)
ENTRY(attention_merge_f16, __half)
