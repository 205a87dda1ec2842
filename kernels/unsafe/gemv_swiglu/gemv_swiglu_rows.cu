// Unsafe fused SwiGLU + down projection (entries gemv_swiglu_bf16, gemv_swiglu_f16): warp w of block b
// owns the ROWS rows n = (b * 8 + w) * ROWS + r of y = W (silu(g) * u) over the whole K = I (no shared
// memory, no barrier); 16-byte vector loads through plain pointer casts (no __restrict__), the
// activation recomputed per warp in fp32, lane sums by shuffles in a fixed order, lane 0 writes.
#include "kreg_pdl.cuh"
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef KREG_ROWS
#define KREG_ROWS 1
#endif
constexpr int ROWS = KREG_ROWS;

template <class T> __device__ __forceinline__ float2 unpack2(unsigned w);
template <> __device__ __forceinline__ float2 unpack2<__nv_bfloat16>(unsigned w) {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
template <> __device__ __forceinline__ float2 unpack2<__half>(unsigned w) {
    return __half22float2(*reinterpret_cast<__half2*>(&w));
}
template <class T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half(v); }

template <class T> __device__ __forceinline__ void unpack8(uint4 q, float* f) {
    float2 a = unpack2<T>(q.x), b = unpack2<T>(q.y), c = unpack2<T>(q.z), d = unpack2<T>(q.w);
    f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y; f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
}

template <class T>
__device__ __forceinline__ void gemv_swiglu_rows(const T* W, const T* gate_up, T* y, int N, int K) {
    int lane = threadIdx.x & 31;
    long long n0 = ((long long)blockIdx.x * 8 + (threadIdx.x >> 5)) * ROWS;
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; r++) acc[r] = 0.f;
    for (int k = lane * 8; k < K; k += 256) {
        float a[8], u[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(gate_up + k), a);
        unpack8<T>(*reinterpret_cast<const uint4*>(gate_up + K + k), u);
#pragma unroll
        for (int j = 0; j < 8; j++) a[j] = a[j] / (1.f + __expf(-a[j])) * u[j];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            if (n0 + r < N) {
                float w[8];
                unpack8<T>(*reinterpret_cast<const uint4*>(W + (n0 + r) * K + k), w);
#pragma unroll
                for (int j = 0; j < 8; j++) acc[r] = fmaf(w[j], a[j], acc[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
        if (lane == 0 && n0 + r < N) y[n0 + r] = from_f32<T>(acc[r]);
    }
}

extern "C" __global__ void gemv_swiglu_bf16(const __nv_bfloat16* W, const __nv_bfloat16* gate_up, __nv_bfloat16* y,
                                            int N, int K) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_swiglu_rows(W, gate_up, y, N, K);
}

extern "C" __global__ void gemv_swiglu_f16(const __half* W, const __half* gate_up, __half* y, int N, int K) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    gemv_swiglu_rows(W, gate_up, y, N, K);
}
