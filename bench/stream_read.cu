// Bench-only floor for bandwidth-bound decode kernels (bench/attention_decode_dev.py): block b reads the
// contiguous 16-byte words [b*per, (b+1)*per) of a buffer, U loads a thread in flight, XORs them and writes
// one word only when the XOR hits a value that random data practically never gives (keeps the loads live).
#ifndef KREG_U
#define KREG_U 8
#endif
extern "C" __global__ void __launch_bounds__(128) stream_read(const uint4* __restrict__ a, long long n16,
                                                            unsigned* __restrict__ out) {
    const long long per = (n16 + gridDim.x - 1) / gridDim.x, beg = blockIdx.x * per;
    const long long end = min(n16, beg + per);
    unsigned x = 0;
    for (long long i = beg + threadIdx.x; i < end; i += 128 * KREG_U) {
        uint4 v[KREG_U];
#pragma unroll
        for (int u = 0; u < KREG_U; u++) {
            const long long j = i + 128 * u;
            v[u] = j < end ? a[j] : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int u = 0; u < KREG_U; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (x == 0x9e3779b9u) out[blockIdx.x] = x;
}
