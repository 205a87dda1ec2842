// wg_double: two stages (s, s + 16 KiB), k steps in pairs: a step loads the next step's chunks into registers, issues its wgmmas on one stage, stores the registers into the other stage, fence.proxy.async, wait_group 0, barrier (steps past K compute on zeros). Correct.
#include <cuda_bf16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ void wgmma64(float* d, unsigned long long da, unsigned long long db) {
    asm volatile("{.reg .pred p; setp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "n"(1));
}

// K-major, 128-byte swizzle: start >> 4, LBO 16 bytes, SBO 1024 bytes, mode 1.
__device__ __forceinline__ unsigned long long desc(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ unsigned swz(int r, int c) { return r * 128 + 16 * (c ^ (r & 7)); }

__device__ __forceinline__ void st_shared_v4(unsigned a, uint4 v) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

// Chunk v = threadIdx.x + 128 h (h < 4): row v / 8, k0 + 8 (v % 8) of the X and W tiles (zeros past T, N, K).
__device__ __forceinline__ void load_tiles(uint4 (&x)[4], uint4 (&w)[4], const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, long long t0, long long n0, int T, int N, int K, int k0) {
#pragma unroll
    for (int h = 0; h < 4; h++) {
        int v = threadIdx.x + 128 * h, r = v >> 3, c = v & 7;
        x[h] = make_uint4(0, 0, 0, 0);
        w[h] = make_uint4(0, 0, 0, 0);
        if (t0 + r < T && k0 < K) x[h] = *reinterpret_cast<const uint4*>(X + (t0 + r) * K + k0 + 8 * c);
        if (n0 + r < N && k0 < K) w[h] = *reinterpret_cast<const uint4*>(W + (n0 + r) * K + k0 + 8 * c);
    }
}

__device__ __forceinline__ void put_tiles(unsigned s, const uint4 (&x)[4], const uint4 (&w)[4]) {
#pragma unroll
    for (int h = 0; h < 4; h++) {
        int v = threadIdx.x + 128 * h;
        st_shared_v4(s + swz(v >> 3, v & 7), x[h]);
        st_shared_v4(s + 8192 + swz(v >> 3, v & 7), w[h]);
    }
}

__device__ __forceinline__ void store_tiles(unsigned s, const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
        long long t0, long long n0, int T, int N, int K, int k0) {
    uint4 x[4], w[4];
    load_tiles(x, w, X, W, t0, n0, T, N, K, k0);
    put_tiles(s, x, w);
}

// The four k16 steps of the stage at s (X tile at s, W tile at s + 8192), one commit group.
__device__ __forceinline__ void mma_tile(float* acc, unsigned s) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < 4; kk++) wgmma64(acc, desc(s + 32 * kk), desc(s + 8192 + 32 * kk));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ unsigned pack2(float a, float b) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<unsigned*>(&v);
}

// Accumulator 4 j + h2: row 16 warp + lane / 4 + 8 (h2 / 2), column 8 j + 2 (lane % 4) + h2 % 2; a loop over j
// (two stores for the prover) with the next tile's accumulators moved down after each.
__device__ __forceinline__ void store_y(__nv_bfloat16* __restrict__ Y, float (&acc)[32], long long t0, long long n0, int T, int N) {
    const long long row = t0 + 16 * (threadIdx.x >> 5) + ((threadIdx.x & 31) >> 2);
#pragma unroll 1
    for (int j = 0; j < 8; j++) {
        const long long col = n0 + 8 * j + 2 * (threadIdx.x & 3);
#pragma unroll
        for (int h = 0; h < 2; h++)
            if (row + 8 * h < T && col < N)
                *reinterpret_cast<unsigned*>(Y + (row + 8 * h) * N + col) = pack2(acc[2 * h], acc[2 * h + 1]);
#pragma unroll
        for (int i = 0; i < 28; i++) acc[i] = acc[i + 4];
    }
}

extern "C" __global__ void __launch_bounds__(128) wg_double(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    extern __shared__ __align__(1024) unsigned char sm[];
    const unsigned s = (unsigned)__cvta_generic_to_shared(sm);
    const long long t0 = 64ll * blockIdx.y, n0 = 64ll * blockIdx.x;
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; i++) acc[i] = 0.f;
    uint4 x[4], w[4];
    load_tiles(x, w, X, W, t0, n0, T, N, K, 0);
    put_tiles(s, x, w);
    fence_proxy_async();
    __syncthreads();
    for (int k0 = 0; k0 < K; k0 += 128) {
        load_tiles(x, w, X, W, t0, n0, T, N, K, k0 + 64);
        mma_tile(acc, s);
        put_tiles(s + 16384, x, w);
        fence_proxy_async();
        wgmma_wait0();
        __syncthreads();
        load_tiles(x, w, X, W, t0, n0, T, N, K, k0 + 128);
        mma_tile(acc, s + 16384);
        put_tiles(s, x, w);
        fence_proxy_async();
        wgmma_wait0();
        __syncthreads();
    }
    store_y(Y, acc, t0, n0, T, N);
}
