// kreg_stream.cuh: 16-byte loads of data a kernel streams once (a weight matrix, a KV cache), as
// ld.global.nc.L1::no_allocate: the stream does not evict what the L1 holds for reuse. A cache hint only;
// the checker reads it as a plain load. H100: the gemv family's 4B layer 88.4% -> 91.9% of copy
// (bench/results/gemv_l1_no_allocate.txt), the tc decode pair 15.07 -> 14.64 us at 8192 positions
// (bench/results/attention_decode_tc_dev.txt).
#pragma once
#include "kreg_own.cuh"

namespace kreg {

template <class T> __device__ __forceinline__ uint4 load_raw_stream(const T* __restrict__ p) {
    uint4 u;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p));
    return u;
}

template <class T> __device__ __forceinline__ F8 load8_stream(const T* __restrict__ p) {
    return unpack8<T>(load_raw_stream<T>(p));
}

}  // namespace kreg
