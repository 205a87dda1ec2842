// Unsafe (unproven) causal prefill attention: the safe kernel's tiling (kernels/safe/attention_prefill)
// with the next key tile's K and V prefetched into registers while the current one is computed, the
// causal mask applied only on tiles that reach past the block's first query position, and registers
// capped for three blocks per SM (the first version unrolled the score and output loops fully: 0.85x
// the safe kernel's speed on the H100). Same arithmetic and roundings as the safe kernel.
#include "kreg_own.cuh"

namespace {

constexpr int BQ = 64, BK = 32, D = 128;
constexpr int QLD = D + 4, KLD = D + 4, VLD = D, PLD = BQ + 4, SLD = D + 8;   // SLD: staged output (DT)
constexpr int K_OFF = 0, V_OFF = K_OFF + BK * KLD, P_OFF = V_OFF + BK * VLD;   // in the dynamic shared memory
static_assert((P_OFF + BK * PLD) * 4 == 41984, "the launch's shared bytes");

// v to the 8 floats at base + 4 * i4 (in float4 units, so that the 16-byte alignment is evident)
__device__ __forceinline__ void store8f(float* base, int i4, const kreg::F8& v) {
    float4* dst = reinterpret_cast<float4*>(base) + i4;
    dst[0] = make_float4(v.v[0], v.v[1], v.v[2], v.v[3]);
    dst[1] = make_float4(v.v[4], v.v[5], v.v[6], v.v[7]);
}

template <class T>
__device__ __forceinline__ void prefill_own(const T* __restrict__ q, const T* __restrict__ kc,
                                            const T* __restrict__ vc, float scale, T* __restrict__ out, int n_q,
                                            int Hq, int Hkv, int start) {
    __shared__ float4 q4[BQ * QLD / 4];                // Q, then the staged output: a buffer of its own
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    float *Qs = reinterpret_cast<float*>(q4), *Ks = sm + K_OFF, *Vs = sm + V_OFF, *Ps = sm + P_OFF;
    const int tid = threadIdx.x, ty = tid >> 3, tx = tid & 7;
    const int row = tid >> 4, ch = (tid & 15) * 8;        // this thread's part of a 16 x 128 slab
    const int q0 = blockIdx.x * BQ, h = blockIdx.y;
    // kv head h / (Hq / Hkv) = h * Hkv / Hq (Hq % Hkv == 0), unsigned: one division by a dim (never 0);
    // the min is a no-op that bounds it plainly
    const unsigned kvh = min(blockIdx.y * (unsigned)Hkv / (unsigned)Hq, (unsigned)Hkv - 1u);
    const int n_keys = start + min(q0 + BQ, n_q);      // keys 0 .. n_keys - 1 are seen by some query
    const float qscale = scale * 1.4426950408889634f;  // scores in base 2 (exp2)
    const float NEG_INF = __int_as_float(0xff800000);

    // Q tile (zero rows past T), in slabs of 8 rows
#pragma unroll 1
    for (int i = 0; i < BQ / 8; i++) {
        const int r = row + 8 * i;
        kreg::F8 v;
        if (q0 + r < n_q) {
            v = kreg::load8<T>(q + ((long long)(q0 + r) * Hq + h) * D + ch);
#pragma unroll
            for (int c = 0; c < 8; c++) v.v[c] *= qscale;
        } else {
#pragma unroll
            for (int c = 0; c < 8; c++) v.v[c] = 0.f;
        }
        store8f(Qs, r * (QLD / 4) + ch / 4, v);
    }
    __syncthreads();

    float o[4][16], m[4], l[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        m[r] = NEG_INF;
        l[r] = 0.f;
#pragma unroll
        for (int c = 0; c < 16; c++) o[r][c] = 0.f;
    }

    uint4 kraw[BK / 8], vraw[BK / 8];          // the next tile, raw (zero rows past n_keys)
    auto fetch = [&](int base) {
#pragma unroll
        for (int i = 0; i < BK / 8; i++) {
            const int r = row + 8 * i;
            kraw[i] = vraw[i] = make_uint4(0u, 0u, 0u, 0u);
            if (base + r < n_keys) {
                const long long at = ((long long)(base + r) * Hkv + kvh) * D + ch;
                kraw[i] = kreg::load_raw<T>(kc + at);
                vraw[i] = kreg::load_raw<T>(vc + at);
            }
        }
    };
    fetch(0);
    int key0 = 0;                   // n_keys >= 1: at least one tile; the same trip count in the whole block
    do {
#pragma unroll
        for (int i = 0; i < BK / 8; i++) {
            const int r = row + 8 * i;
            store8f(Ks, r * (KLD / 4) + ch / 4, kreg::unpack8<T>(kraw[i]));
            store8f(Vs, r * (VLD / 4) + ch / 4, kreg::unpack8<T>(vraw[i]));
        }
        __syncthreads();            // K and V staged
        if (key0 + BK < n_keys) fetch(key0 + BK);

        // scores of the queries ty + 16 r and the keys tx + 8 j
        float s[4][4];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int j = 0; j < 4; j++) s[r][j] = 0.f;
#pragma unroll 2
        for (int d = 0; d < D; d += 4) {
            float4 qv[4], kv[4];
#pragma unroll
            for (int r = 0; r < 4; r++) qv[r] = *reinterpret_cast<const float4*>(Qs + (ty + 16 * r) * QLD + d);
#pragma unroll
            for (int j = 0; j < 4; j++) kv[j] = *reinterpret_cast<const float4*>(Ks + (tx + 8 * j) * KLD + d);
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    s[r][j] = fmaf(qv[r].x, kv[j].x, s[r][j]);
                    s[r][j] = fmaf(qv[r].y, kv[j].y, s[r][j]);
                    s[r][j] = fmaf(qv[r].z, kv[j].z, s[r][j]);
                    s[r][j] = fmaf(qv[r].w, kv[j].w, s[r][j]);
                }
        }

        // causal mask and online softmax (base 2); P transposed, column ty * 4 + r for query ty + 16 r
        float p[4][4];
        const bool diagonal = key0 + BK - 1 > start + q0;      // some key of the tile is past some query
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int last = start + q0 + ty + 16 * r;          // the row's last visible position
            float mt = NEG_INF;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (diagonal && key0 + tx + 8 * j > last) s[r][j] = NEG_INF;
                mt = fmaxf(mt, s[r][j]);
            }
#pragma unroll
            for (int off = 1; off < 8; off <<= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
            const float mn = fmaxf(m[r], mt);                  // finite: key 0 is in tile 0 for every row
            const float alpha = exp2f(m[r] - mn);
            m[r] = mn;
            float ls = 0.f;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                p[r][j] = exp2f(s[r][j] - mn);
                ls += p[r][j];
            }
            l[r] = l[r] * alpha + ls;                          // this thread's keys; summed at the end
#pragma unroll
            for (int c = 0; c < 16; c++) o[r][c] *= alpha;
        }
#pragma unroll
        for (int j = 0; j < 4; j++)
            *reinterpret_cast<float4*>(Ps + (tx + 8 * j) * PLD + ty * 4) = make_float4(p[0][j], p[1][j], p[2][j], p[3][j]);
        __syncthreads();            // P complete

        // o[r][4 i + c] += sum_k P[k][ty + 16 r] V[k][tx * 4 + 32 i + c]
#pragma unroll 4
        for (int k = 0; k < BK; k++) {
            const float4 pv = *reinterpret_cast<const float4*>(Ps + k * PLD + ty * 4);
            const float pr[4] = {pv.x, pv.y, pv.z, pv.w};
            float4 vv[4];
#pragma unroll
            for (int i = 0; i < 4; i++) vv[i] = *reinterpret_cast<const float4*>(Vs + k * VLD + tx * 4 + 32 * i);
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    o[r][4 * i + 0] = fmaf(pr[r], vv[i].x, o[r][4 * i + 0]);
                    o[r][4 * i + 1] = fmaf(pr[r], vv[i].y, o[r][4 * i + 1]);
                    o[r][4 * i + 2] = fmaf(pr[r], vv[i].z, o[r][4 * i + 2]);
                    o[r][4 * i + 3] = fmaf(pr[r], vv[i].w, o[r][4 * i + 3]);
                }
        }
        __syncthreads();            // K, V and P free for the next tile
        key0 += BK;
    } while (key0 < n_keys);

    // normalise and round once; stage the rows as DT in Q's place (Q is no longer read), each thread's 16
    // values of a row contiguous (position tx * 16 + 4 i + c holds dim tx * 4 + 32 i + c); then write
    // out[t, h] in 16-byte chunks of 8 dims (dims 8 n .. 8 n + 7 sit at positions (2 n % 8) * 16 + 4 (n / 4)
    // and ((2 n + 1) % 8) * 16 + 4 (n / 4), four each)
    T* St = reinterpret_cast<T*>(Qs);
#pragma unroll
    for (int r = 0; r < 4; r++) {
        float lt = l[r];
#pragma unroll
        for (int off = 1; off < 8; off <<= 1) lt += __shfl_xor_sync(0xffffffffu, lt, off);
        const float inv = 1.f / lt;
        kreg::F8 a, b;
#pragma unroll
        for (int c = 0; c < 8; c++) {
            a.v[c] = o[r][c] * inv;
            b.v[c] = o[r][8 + c] * inv;
        }
        kreg::store8<T>(St + (ty + 16 * r) * SLD + tx * 16, a);
        kreg::store8<T>(St + (ty + 16 * r) * SLD + tx * 16 + 8, b);
    }
    __syncthreads();
    const int cm = ch / 8, lo = ((2 * cm) % 8) * 16 + 4 * (cm / 4), hi = ((2 * cm + 1) % 8) * 16 + 4 * (cm / 4);
#pragma unroll 1
    for (int i = 0; i < BQ / 8; i++) {
        const int r = row + 8 * i;
        if (q0 + r < n_q) {
            const uint2 a = *reinterpret_cast<const uint2*>(St + r * SLD + lo);
            const uint2 b = *reinterpret_cast<const uint2*>(St + r * SLD + hi);
            *reinterpret_cast<uint4*>(out + ((long long)(q0 + r) * Hq + h) * D + ch) = make_uint4(a.x, a.y, b.x, b.y);
        }
    }
}

}  // namespace

#define ENTRY(NAME, T)                                                                                        \
    extern "C" __global__ void __launch_bounds__(128, 3) NAME(const T* __restrict__ q, const T* __restrict__ kc, \
                                                           const T* __restrict__ vc, float scale,            \
                                                           T* __restrict__ out, int n_q, int Hq, int Hkv,    \
                                                           int start) {                                      \
        prefill_own<T>(q, kc, vc, scale, out, n_q, Hq, Hkv, start);                                          \
    }
ENTRY(attention_prefill_bf16, __nv_bfloat16)
ENTRY(attention_prefill_f16, __half)
