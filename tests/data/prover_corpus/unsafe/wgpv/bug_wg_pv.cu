// bug_wg_pv_*: wg_pv (tests/prover_corpus/safe/wgpv) broken. refill: wgmma.wait_group 1 leaves a tile's P V
// in flight past the barrier, so the next step's copies refill the V stage a transposed-B wgmma may still read
// (race). lbo: the descriptor's LBO is the stage size, not the half's, so the second 64-dim group runs a whole
// stage on, past the last stage's end (out of bounds; into the other stage, filled meanwhile, for the first).
// bar_in_skip: a __syncthreads inside the warpgroup-uniform skip (the warpgroups pass different numbers of
// barriers). warp_skip: warps without rows
// (past T) skip too: a wgmma reached by part of a warpgroup.
#include <cuda_bf16.h>

constexpr int BN = 64;              // keys a tile
constexpr int KH = BN * 128;        // bytes of one 64-dim half of a V tile ([BN keys][64 dims], 128-byte swizzle)
constexpr int STAGE = 2 * KH;       // a V tile: two halves

// D[64][128] += A (registers a[0..3]) x B (shared, MN-major: imm-trans-b 1), one m64n128k16 step (the RS form)
__device__ __forceinline__ void wgmma_rs(float* d, const unsigned* a, unsigned long long db) {
    asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// 128-byte-swizzle descriptor: start >> 4, LBO >> 4 (MN-major: the distance of the 64-dim halves), SBO 1024 (8 keys), mode 1.
__device__ __forceinline__ unsigned long long desc(unsigned addr, unsigned lbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
           | ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ unsigned swz(int r, int c) { return r * 128 + 16 * (c ^ (r & 7)); }

// V rows key0 .. key0 + BN - 1 into the tile at st by cp.async (zeros at or past n_keys): 4 chunks a thread.
__device__ __forceinline__ void copy_tile(unsigned st, const __nv_bfloat16* __restrict__ v, int key0, int n_keys, int tid) {
#pragma unroll
    for (int p = 0; p < 4; p++) {
        const int i = tid + 256 * p, r = i >> 4, ch = i & 15, key = key0 + r;
        const bool ok = key < n_keys;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(st + (ch >> 3) * KH + swz(r, ch & 7)),
                     "l"(v + (ok ? key * 128 + 8 * ch : 0)), "r"(ok ? 16 : 0));
    }
}

// x[row][key] (zero where key > row, or row >= T), one element
__device__ __forceinline__ unsigned elem(const __nv_bfloat16* __restrict__ x, int row, int key, int T) {
    return row < T && key <= row ? (unsigned)__bfloat16_as_ushort(x[row * T + key]) : 0u;
}

// The m64k16 A fragments of this thread's rows r0, r0 + 8 for the 4 k16 steps of the tile at key0.
__device__ __forceinline__ void load_a(unsigned (*a)[4], const __nv_bfloat16* __restrict__ x, int r0, int key0, int tq, int T) {
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = r0 + 8 * (i & 1), key = key0 + 16 * kk + 8 * (i >> 1) + 2 * tq;
            a[kk][i] = elem(x, row, key, T) | (elem(x, row, key + 1, T) << 16);
        }
}

__device__ __forceinline__ unsigned pack2(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<unsigned*>(&h);
}

enum { NONE, WAIT1, LBO_STAGE, BAR_IN_SKIP, SKIP_BY_WARP };

// Block x (two warpgroups, 256 threads) owns rows t0 .. t0 + 127 of y; warpgroup g rows t0 + 64 g .. + 63 and the
// key tiles 0 .. live - 1 that hold a key its rows see (warpgroup-uniform: the other warpgroup may do more).
// Per tile j: its copies landed (wait_group 0), fence.proxy.async, barrier (both warpgroups retired their
// wgmmas of tile j - 1: that stage is free), copies of tile j + 1 into the other stage; then 4 RS wgmmas.
template <int BUG>
__device__ __forceinline__ void pv(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ v,
                                   __nv_bfloat16* __restrict__ y, int T) {
    extern __shared__ __align__(1024) unsigned char sm[];
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(sm);
    const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, lane = tid & 31, gr = lane >> 2, tq = lane & 3;
    const int t0 = 128 * blockIdx.x;
    const int n_keys = min(t0 + 128, T), tiles = (n_keys + BN - 1) / BN;
    const int r0 = t0 + 64 * wg + 16 * w + gr;
    const int live = min(tiles, (t0 + 64 * wg + 63) / BN + 1);
    float o[64];
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.f;
    copy_tile(s0, v, 0, n_keys, tid);
    asm volatile("cp.async.commit_group;" ::: "memory");
#pragma unroll 1
    for (int j = 0; j < tiles; j++) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (j + 1 < tiles) copy_tile(s0 + ((j + 1) & 1) * STAGE, v, (j + 1) * BN, n_keys, tid);
        asm volatile("cp.async.commit_group;" ::: "memory");
        if (j >= live || (BUG == SKIP_BY_WARP && t0 + 64 * wg + 16 * w >= T)) continue;
        const unsigned vs = s0 + (j & 1) * STAGE;
        unsigned a[4][4];
        load_a(a, x, r0, j * BN, tq, T);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < 4; kk++) wgmma_rs(o, a[kk], desc(vs + 2048 * kk, BUG == LBO_STAGE ? STAGE : KH));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        if (BUG == WAIT1) asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        else asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (BUG == BAR_IN_SKIP) __syncthreads();
        asm volatile("" : "+r"(a[0][0]), "+r"(a[1][0]), "+r"(a[2][0]), "+r"(a[3][0]) :: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    // o[4 jd + h]: row r0 + 8 (h / 2), column 8 jd + 2 tq + h % 2; a loop over jd (two stores for the prover)
#pragma unroll 1
    for (int jd = 0; jd < 16; jd++) {
#pragma unroll
        for (int h = 0; h < 2; h++)
            if (r0 + 8 * h < T)
                *reinterpret_cast<unsigned*>(y + (r0 + 8 * h) * 128 + 8 * jd + 2 * tq) = pack2(o[2 * h], o[2 * h + 1]);
#pragma unroll
        for (int i = 0; i < 60; i++) o[i] = o[i + 4];
    }
}

extern "C" __global__ void __launch_bounds__(256) bug_wg_pv_refill(const __nv_bfloat16* __restrict__ x,
        const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ y, int T) {
    pv<WAIT1>(x, v, y, T);
}

extern "C" __global__ void __launch_bounds__(256) bug_wg_pv_lbo(const __nv_bfloat16* __restrict__ x,
        const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ y, int T) {
    pv<LBO_STAGE>(x, v, y, T);
}

extern "C" __global__ void __launch_bounds__(256) bug_wg_pv_bar_in_skip(const __nv_bfloat16* __restrict__ x,
        const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ y, int T) {
    pv<BAR_IN_SKIP>(x, v, y, T);
}

extern "C" __global__ void __launch_bounds__(256) bug_wg_pv_warp_skip(const __nv_bfloat16* __restrict__ x,
        const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ y, int T) {
    pv<SKIP_BY_WARP>(x, v, y, T);
}
