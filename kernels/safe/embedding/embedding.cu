// Safe embedding gather (entries embedding_bf16, embedding_f16): block (x, t) owns 8 * blockDim.x
// columns of output row t; thread j of it copies the 16 bytes at columns c = (blockIdx.x * blockDim.x
// + j) * 8 from table row ids[t]. In bounds because the op declares 0 <= ids < V.
#include "kreg_pdl.cuh"
#include "kreg_own.cuh"

template <class T>
__device__ __forceinline__ void embedding_own(const T* __restrict__ table, const int* __restrict__ ids,
                                              T* __restrict__ out, int H) {
    long long t = blockIdx.y;
    int c = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (c < H) {
        long long id = ids[t];
        kreg::copy8(out + t * H + c, table + id * H + c);
    }
}

extern "C" __global__ void embedding_bf16(const __nv_bfloat16* __restrict__ table, const int* __restrict__ ids,
                                          __nv_bfloat16* __restrict__ out, int H) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    embedding_own(table, ids, out, H);
}

extern "C" __global__ void embedding_f16(const __half* __restrict__ table, const int* __restrict__ ids,
                                         __half* __restrict__ out, int H) {
    kreg::pdl_begin();   // PDL: wait first (checker/pdl.py)
    embedding_own(table, ids, out, H);
}
