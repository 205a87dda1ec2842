// Safe two-stage argmax (lowest index on ties, NaN never selected). Stage 1: block (c, b) owns the
// chunk [8192c, 8192c + 8192) of row b, read as 16-byte vectors of 8 logits (V % 8 == 0 keeps every row
// 16-byte aligned), 4 per thread, and writes its (max, index) into partial slot (b, c). Stage 2: block b
// reduces row b's partials (at most 128: one per thread) and owns out[b]. Barriers are reached by every
// thread of a block; reads past a row's end are clamped to its last vector (real elements, true indices).
#include "kreg_pdl.cuh"
#include <cuda_bf16.h>
#include <cuda_fp16.h>

constexpr int BLOCK = 256, VEC = 8, LOADS = 4, CHUNK = BLOCK * VEC * LOADS;   // 8192 logits per block
constexpr int NONE = 0x7fffffff;   // index of an empty (max, index) pair: loses to every real one

// Two 16-bit logits in one 32-bit word -> floats.
__device__ __forceinline__ float2 to_float2(unsigned w, __nv_bfloat16) {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
__device__ __forceinline__ float2 to_float2(unsigned w, __half) { return __half22float2(*reinterpret_cast<__half2*>(&w)); }

// (v, i) replaces (bv, bi) if it is larger, or equal with a lower index (a NaN v never does).
// Branch-free (selects), so a thread's path does not depend on the data.
__device__ __forceinline__ void take(float& bv, int& bi, float v, int i) {
    const bool better = (v > bv) | ((v == bv) & (i < bi));
    bv = better ? v : bv;
    bi = better ? i : bi;
}

// Block-wide (max, lowest index); every thread of the block must call it; thread 0 gets the result.
__device__ __forceinline__ void block_argmax(float& bv, int& bi) {
    __shared__ float sv[BLOCK / 32];
    __shared__ int si[BLOCK / 32];
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) take(bv, bi, __shfl_xor_sync(0xffffffffu, bv, m), __shfl_xor_sync(0xffffffffu, bi, m));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        sv[warp] = bv;
        si[warp] = bi;
    }
    __syncthreads();
    bv = __int_as_float(0xff800000);
    bi = NONE;
    if (lane < BLOCK / 32) {
        bv = sv[lane];
        bi = si[lane];
    }
#pragma unroll
    for (int m = BLOCK / 64; m > 0; m >>= 1) take(bv, bi, __shfl_xor_sync(0xffffffffu, bv, m), __shfl_xor_sync(0xffffffffu, bi, m));
}

template <class T>
__device__ __forceinline__ void partial(const T* __restrict__ logits, float* __restrict__ part_val,
                                        int* __restrict__ part_idx, int V, int nchunks) {
    const int b = blockIdx.y, c = blockIdx.x;
    const long long row = (long long)b * V;
    // A vector past the row's end is clamped to the row's last vector, read with its true indices: a
    // duplicate of real elements never changes the (max, lowest index), so no per-element mask is needed.
    uint4 u[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; k++) {          // all loads first: 64 bytes in flight per thread
        const int i = min(c * CHUNK + (k * BLOCK + threadIdx.x) * VEC, V - VEC);
        u[k] = *reinterpret_cast<const uint4*>(logits + row + i);
    }
    float bv = __int_as_float(0xff800000);
    int bi = NONE;
#pragma unroll
    for (int k = 0; k < LOADS; k++) {
        const int i = min(c * CHUNK + (k * BLOCK + threadIdx.x) * VEC, V - VEC);
        const unsigned w[4] = {u[k].x, u[k].y, u[k].z, u[k].w};
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const float2 f = to_float2(w[q], T());
            take(bv, bi, f.x, i + 2 * q);
            take(bv, bi, f.y, i + 2 * q + 1);
        }
    }
    block_argmax(bv, bi);
    if (threadIdx.x == 0) {
        part_val[(long long)b * nchunks + c] = bv;
        part_idx[(long long)b * nchunks + c] = bi;
    }
}

extern "C" __global__ void argmax_partial_bf16(const __nv_bfloat16* __restrict__ logits, float* __restrict__ part_val,
                                               int* __restrict__ part_idx, int V, int nchunks) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    partial(logits, part_val, part_idx, V, nchunks);
}

extern "C" __global__ void argmax_partial_f16(const __half* __restrict__ logits, float* __restrict__ part_val,
                                              int* __restrict__ part_idx, int V, int nchunks) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    partial(logits, part_val, part_idx, V, nchunks);
}

extern "C" __global__ void argmax_final(const float* __restrict__ part_val, const int* __restrict__ part_idx,
                                        int* __restrict__ out, int nchunks) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    const int b = blockIdx.x;
    float bv = __int_as_float(0xff800000);
    int bi = NONE;
    // nchunks = cdiv(V, 8192) <= 128 < BLOCK (V <= 2^20): thread c reads partial c, no loop.
    // Threads past nchunks re-read the last partial (a duplicate changes nothing).
    const int c = min((int)threadIdx.x, nchunks - 1);
    take(bv, bi, part_val[(long long)b * nchunks + c], part_idx[(long long)b * nchunks + c]);
    block_argmax(bv, bi);
    if (threadIdx.x == 0) out[b] = bi == NONE ? 0 : bi;
}
