// Safe two-stage argmax (lowest index on ties, NaN never selected). Stage 1: block (c, b) owns the
// chunk [4096c, 4096c + 4096) of row b and writes its (max, index) into partial slot (b, c). Stage 2:
// block b reduces row b's partials and owns out[b]. Barriers are reached by every thread of a block.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

constexpr int BLOCK = 256, ITEMS = 16, CHUNK = BLOCK * ITEMS;
constexpr int NONE = 0x7fffffff;   // index of an empty (max, index) pair: loses to every real one

__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

// (v, i) replaces (bv, bi) if it is larger, or equal with a lower index (a NaN v never does).
__device__ __forceinline__ void take(float& bv, int& bi, float v, int i) {
    if (v > bv || (v == bv && i < bi)) {
        bv = v;
        bi = i;
    }
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
    float bv = __int_as_float(0xff800000);
    int bi = NONE;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        const int i = c * CHUNK + k * BLOCK + threadIdx.x;
        if (i < V) take(bv, bi, to_float(logits[row + i]), i);
    }
    block_argmax(bv, bi);
    if (threadIdx.x == 0) {
        part_val[(long long)b * nchunks + c] = bv;
        part_idx[(long long)b * nchunks + c] = bi;
    }
}

extern "C" __global__ void argmax_partial_bf16(const __nv_bfloat16* __restrict__ logits, float* __restrict__ part_val,
                                               int* __restrict__ part_idx, int V, int nchunks) {
    partial(logits, part_val, part_idx, V, nchunks);
}

extern "C" __global__ void argmax_partial_f16(const __half* __restrict__ logits, float* __restrict__ part_val,
                                              int* __restrict__ part_idx, int V, int nchunks) {
    partial(logits, part_val, part_idx, V, nchunks);
}

extern "C" __global__ void argmax_final(const float* __restrict__ part_val, const int* __restrict__ part_idx,
                                        int* __restrict__ out, int nchunks) {
    const int b = blockIdx.x;
    float bv = __int_as_float(0xff800000);
    int bi = NONE;
    for (int c = threadIdx.x; c < nchunks; c += BLOCK) take(bv, bi, part_val[(long long)b * nchunks + c], part_idx[(long long)b * nchunks + c]);
    block_argmax(bv, bi);
    if (threadIdx.x == 0) out[b] = bi == NONE ? 0 : bi;
}
