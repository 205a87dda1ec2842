// Safe row gather (entries gather_row_bf16, gather_row_f16): thread i owns out[8i, 8i + 8) and copies
// it from row R of x as one 16-byte vector.
#include "kreg_own.cuh"

template <class T>
__device__ __forceinline__ void gather_row_own(const T* __restrict__ x, T* __restrict__ out, int H, int R) {
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (c < H) kreg::copy8(out + c, x + (long long)R * H + c);
}

extern "C" __global__ void gather_row_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out,
                                           int H, int R) {
    gather_row_own(x, out, H, R);
}

extern "C" __global__ void gather_row_f16(const __half* __restrict__ x, __half* __restrict__ out, int H, int R) {
    gather_row_own(x, out, H, R);
}
