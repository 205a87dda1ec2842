// Safe causal prefill attention with Hopper warpgroup MMA, FA3 style (entries attention_prefill_wg_bf16,
// attention_prefill_wg_f16; target sm_90a: compile option --gpu-architecture=compute_90a). Block (x, h) of
// two warpgroups (256 threads) owns the 128 query rows t0 .. t0 + 127 of query head h (t0 = 128 x; with
// KREG_LONGEST_FIRST=1, the longest rows first: t0 = 128 (gridDim.x - 1 - x)); warpgroup g owns rows t0 + 64 g .. + 63. Shared memory, every tile in the
// canonical 128-byte-swizzle layout (rows of 128 bytes = 64 dims, 16-byte chunk c of row r at chunk
// c ^ (r & 7), tiles 1024-byte aligned): Q [2 halves of 64 dims][128 rows], and STAGES stages of K and V
// [2 halves][BN keys] each, filled by cp.async (zeros past T and past the block's last key). Per key tile:
// wait for its copies, fence.proxy.async (generic-proxy writes read by the async proxy), barrier (every
// warpgroup retired its wgmmas of the tile before: that stage is free), copies of tile j + STAGES - 1;
// then per warpgroup, where some key of the tile is visible to its rows:
//   S = Q K^T: 8 wgmma m64nBNk16 from shared (both operands K-major), fp32 accumulators;
//   scores to base 2, causal mask (key > query position: -inf) in the tiles that reach past the first row,
//   online softmax in fp32 (row max over the 4 lanes of a row, o and l rescaled when a warp's max moved);
//   P split into two DT parts, hi = P rounded, lo = (P - hi) rounded (the contract's one output rounding
//   needs P to ~2^-16), kept in registers: the accumulator fragment of S is, word for word, the A register
//   fragment of the next wgmma (rows 16 w + l / 4 (+ 8), keys 2 (l % 4) (+ 1, + 8));
//   O += P_hi V + P_lo V: wgmma m64n128k16 with A from registers and B = V read MN-major (transpose-b 1:
//   the V tile's rows are keys, dims contiguous, as in the cache), descriptor LBO = the distance of the
//   two 64-dim halves, SBO = 1024 (8 keys), start advanced 2048 bytes (16 keys) a k16 step.
// Epilogue: o / l rounded to DT, a 4 x 4 word transpose within each quad, one 16-byte store per row slice.
// Options: KREG_BN (64 or 128 keys a tile), KREG_STAGES; KREG_PIPE=1: S of tile j issued before P V of tile
// j - 1 and the softmax of tile j run while P V is in flight (two P buffers; the wgmma commits and waits
// unconditional, so ptxas keeps the wgmmas asynchronous); KREG_PINGPONG=1: the warpgroups take turns issuing
// (named barriers), one's softmax under the other's tensor work; KREG_QREG=1: Q as register A fragments
// (S by register-A wgmma, K K-major; no Q tile in shared memory, more stages fit).
// Registered (safe): BN 128, 2 stages, block order (KREG_LONGEST_FIRST=0): all four properties proven for all dims
// (prover-0.13 models the register-A / MN-major wgmma). Not proven: KREG_LONGEST_FIRST=1 (the output stores'
// write/write pairs, row = 128 (gridDim.x - 1 - x) + ..., as in kernels/include/kreg_prefill_tc.cuh).
// Entries attention_prefill_wg_probe_{bf16,f16}: the layout check of the RS / transposed form (bench/prefill_wg_dev.py,
// tests/test_emu_wgmma_rs.py): one warpgroup, A [64][BN] from global into A fragments, B [BN][128] into a V
// stage by the kernel's own copy code, BN / 16 chained wgmmas, the raw accumulators per (thread, register).
#include "kreg_own.cuh"

namespace {

#ifndef KREG_BN
#define KREG_BN 64            // keys a tile (64 or 128)
#endif
#ifndef KREG_STAGES
#define KREG_STAGES 2         // K/V stages (2: double buffer)
#endif
#ifndef KREG_SKIPRESCALE
#define KREG_SKIPRESCALE 1    // o and l rescaled only when a row max of the warp moved (bit-identical)
#endif
#ifndef KREG_PIPE
#define KREG_PIPE 0           // 1: S of tile j issued before P V of tile j - 1, softmax while P V runs (STAGES >= 3)
#endif
#ifndef KREG_PINGPONG
#define KREG_PINGPONG 0       // 1 (with KREG_PIPE): the warpgroups take turns issuing their wgmmas (named barriers
                              // 1 and 2), so that one's softmax overlaps the other's tensor work (FA3's schedule)
#endif
#ifndef KREG_QREG
#define KREG_QREG 0           // 1: Q as A fragments in registers (S by register-A wgmma; no Q tile in shared memory)
#endif
#ifndef KREG_MINB
#define KREG_MINB 1
#endif
#ifndef KREG_LONGEST_FIRST
#define KREG_LONGEST_FIRST 1  // 1: block x takes row tile gridDim.x - 1 - x (the longest rows start first; the prover
                              // does not close the output stores' write/write pairs for all dims: see
                              // kernels/include/kreg_prefill_tc.cuh); 0: row tile x (the registered, proven build)
#endif
constexpr int BM = 128, BN = KREG_BN, D = 128, STAGES = KREG_STAGES, NT = 256;
constexpr int QH = KREG_QREG ? 0 : BM * 128; // bytes of one 64-dim half of the Q tile (none: Q in registers)
constexpr int KH = BN * 128;                 // bytes of one 64-dim half of a K or V tile
constexpr int STAGE = 4 * KH;                // K halves, then V halves
static_assert(BN == 64 || BN == 128, "key tile");
static_assert(!KREG_PINGPONG || KREG_PIPE, "ping-pong is a schedule of the pipelined loop");
static_assert(STAGES >= 2 + KREG_PIPE, "stages: the pipelined loop keeps two tiles' stages busy");
#define KREG_INF __int_as_float(0x7f800000)

// D[64][64] += A (shared, K-major) x B (shared, K-major): one m64n64k16 step
template <bool BF> __device__ __forceinline__ void wgmma_ss_n64(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db));
}
// D[64][128] += A (shared, K-major) x B (shared, K-major): one m64n128k16 step
template <bool BF> __device__ __forceinline__ void wgmma_ss_n128(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db));
}
// D[64][128] += A (registers a[0..3]) x B (shared, MN-major: transpose-b 1): one m64n128k16 step
template <bool BF> __device__ __forceinline__ void wgmma_rs_n128(float* d, const unsigned* a, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
// D[64][64] += A (registers a[0..3]) x B (shared, K-major: transpose-b 0): one m64n64k16 step
template <bool BF> __device__ __forceinline__ void wgmma_rsk_n64(float* d, const unsigned* a, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
// D[64][128] += A (registers a[0..3]) x B (shared, K-major: transpose-b 0): one m64n128k16 step
template <bool BF> __device__ __forceinline__ void wgmma_rsk_n128(float* d, const unsigned* a, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

template <bool BF> __device__ __forceinline__ void wgmma_s(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BN == 128) wgmma_ss_n128<BF>(d, da, db);
    else wgmma_ss_n64<BF>(d, da, db);
}
template <bool BF> __device__ __forceinline__ void wgmma_s(float* d, const unsigned* a, unsigned long long db) {
    if constexpr (BN == 128) wgmma_rsk_n128<BF>(d, a, db);
    else wgmma_rsk_n64<BF>(d, a, db);
}

template <class T> struct IsBf16 { static constexpr bool value = false; };
template <> struct IsBf16<__nv_bfloat16> { static constexpr bool value = true; };

// Descriptor of a 128-byte-swizzled operand at shared address addr: start >> 4 (bits 0-13), LBO >> 4
// (bits 16-29; K-major: unused, 16), SBO 1024 >> 4 (bits 32-45: 8 rows of 128 bytes), mode 1 = 128B (62-63).
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr, unsigned lbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16)
           | ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

// The byte offset of (row r, 16-byte chunk c) in a 128-byte-swizzled tile.
__device__ __forceinline__ unsigned swz(int r, int c) { return r * 128 + 16 * (c ^ (r & 7)); }

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void named_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Rows key0 .. key0 + BN - 1 of one K or V cache (kv head g) into the two halves at shared address dst,
// by thread `tid` of `nt` (zeros at or past n_keys).
template <class T, int nt = NT>
__device__ __forceinline__ void load_kv(unsigned dst, const T* __restrict__ c, int key0, int n_keys, int Hkv, int g,
                                        int tid) {
#pragma unroll
    for (int p = 0; p < BN * 16 / nt; p++) {
        const int v = tid + nt * p, r = v >> 4, ch = v & 15, key = key0 + r;
        const bool ok = key < n_keys;
        cp_async16(dst + (ch >> 3) * KH + swz(r, ch & 7), c + (ok ? ((long long)key * Hkv + g) * D + 8 * ch : 0), ok);
    }
}

// One 16-byte global store as one instruction.
template <class T> __device__ __forceinline__ void st_global_v4(T* p, const unsigned (&u)[4]) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3])
                 : "memory");
}

// O += P V of one stage's V tile (shared address vs): per k16 step the hi and the lo part of P.
template <bool BF>
__device__ __forceinline__ void pv(float* o, const unsigned (*ph)[4], const unsigned (*pl)[4], unsigned vs) {
#pragma unroll
    for (int kv = 0; kv < BN / 16; kv++) {
        const unsigned long long db = sw128_desc(vs + 2048 * kv, KH);
        wgmma_rs_n128<BF>(o, ph[kv], db);
        wgmma_rs_n128<BF>(o, pl[kv], db);
    }
}

// Online softmax of one tile's scores s (this thread's rows: qpos0 and qpos1 = qpos0 + 8; s[4 jj + e] at
// row qpos0 (e < 2) or qpos1, key key0 + 8 jj + (e & 1), key0 = the tile's first key + 2 tq): to base 2,
// causal mask where diag, the running max (m) and sum (l) updated, P in two DT parts into ph / pl (the A
// fragments of the k16 steps: step jj / 2, register 2 (jj & 1) + row half). Returns whether o must be
// multiplied by (c0, c1) (warp-uniform: not where no row max of the warp moved, KREG_SKIPRESCALE).
template <class T>
__device__ __forceinline__ bool softmax_tile(float* s, int key0, bool diag, int qpos0, int qpos1, float sl2,
                                             float& m0, float& m1, float& l0, float& l1, float& c0, float& c1,
                                             unsigned (*ph)[4], unsigned (*pl)[4]) {
    // the mask on the raw scores, their row max scaled once (the max of the scaled scores where sl2 >= 0;
    // a negative scale is applied first), each p = 2^(s sl2 - max) with one fma
    if (sl2 < 0.f) {
#pragma unroll
        for (int i = 0; i < BN / 2; i++) s[i] *= sl2;
        sl2 = 1.f;
    }
    float mx0 = -KREG_INF, mx1 = -KREG_INF;
    if (diag) {
#pragma unroll
        for (int jj = 0; jj < BN / 8; jj++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int key = key0 + 8 * jj + e;
                s[4 * jj + e] = key <= qpos0 ? s[4 * jj + e] : -KREG_INF;
                s[4 * jj + 2 + e] = key <= qpos1 ? s[4 * jj + 2 + e] : -KREG_INF;
            }
    }
#pragma unroll
    for (int jj = 0; jj < BN / 8; jj++) {
        mx0 = fmaxf(mx0, fmaxf(s[4 * jj], s[4 * jj + 1]));
        mx1 = fmaxf(mx1, fmaxf(s[4 * jj + 2], s[4 * jj + 3]));
    }
#pragma unroll
    for (int x = 1; x <= 2; x <<= 1) {
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, x));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, x));
    }
    mx0 = fmaxf(m0, mx0 * sl2);
    mx1 = fmaxf(m1, mx1 * sl2);
    const float b0 = mx0 == -KREG_INF ? 0.f : mx0, b1 = mx1 == -KREG_INF ? 0.f : mx1;
    c0 = exp2f(m0 - b0);
    c1 = exp2f(m1 - b1);
#if KREG_SKIPRESCALE
    const bool moved = !__all_sync(0xffffffffu, mx0 == m0 && mx1 == m1);   // else c0 = c1 = 1 (or o, l still 0)
#else
    const bool moved = true;
#endif
    if (moved) {
        l0 *= c0;
        l1 *= c1;
    }
    m0 = mx0;
    m1 = mx1;
#pragma unroll
    for (int jj = 0; jj < BN / 8; jj++) {
        const float p0 = exp2f(fmaf(s[4 * jj], sl2, -b0)), p1 = exp2f(fmaf(s[4 * jj + 1], sl2, -b0));
        const float p2 = exp2f(fmaf(s[4 * jj + 2], sl2, -b1)), p3 = exp2f(fmaf(s[4 * jj + 3], sl2, -b1));
        l0 += p0 + p1;
        l1 += p2 + p3;
        const unsigned h01 = kreg::Cvt<T>::pack(p0, p1), h23 = kreg::Cvt<T>::pack(p2, p3);
        const float2 r01 = kreg::Cvt<T>::unpack(h01), r23 = kreg::Cvt<T>::unpack(h23);
        ph[jj >> 1][(jj & 1) * 2 + 0] = h01;
        ph[jj >> 1][(jj & 1) * 2 + 1] = h23;
        pl[jj >> 1][(jj & 1) * 2 + 0] = kreg::Cvt<T>::pack(p0 - r01.x, p1 - r01.y);
        pl[jj >> 1][(jj & 1) * 2 + 1] = kreg::Cvt<T>::pack(p2 - r23.x, p3 - r23.y);
    }
    return moved;
}

__device__ __forceinline__ void rescale(float* o, float c0, float c1) {
#pragma unroll
    for (int d = 0; d < 16; d++) {
        o[4 * d] *= c0;
        o[4 * d + 1] *= c0;
        o[4 * d + 2] *= c1;
        o[4 * d + 3] *= c1;
    }
}

// S = Q K^T of one K tile (shared address ks) for warpgroup rows at qa: 8 wgmmas into s (zeroed here).
template <bool BF> __device__ __forceinline__ void scores(float* s, unsigned qa, unsigned ks) {
#pragma unroll
    for (int i = 0; i < BN / 2; i++) s[i] = 0.f;
    wg_fence();
#pragma unroll
    for (int hf = 0; hf < 2; hf++)
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            wgmma_s<BF>(s, sw128_desc(qa + hf * QH + 32 * kk, 16), sw128_desc(ks + hf * KH + 32 * kk, 16));
    wg_commit();
}

// The same with Q as A fragments qf[8 k16 steps][4] in registers.
template <bool BF> __device__ __forceinline__ void scores(float* s, const unsigned (*qf)[4], unsigned ks) {
#pragma unroll
    for (int i = 0; i < BN / 2; i++) s[i] = 0.f;
    wg_fence();
#pragma unroll
    for (int hf = 0; hf < 2; hf++)
#pragma unroll
        for (int kk = 0; kk < 4; kk++) wgmma_s<BF>(s, qf[4 * hf + kk], sw128_desc(ks + hf * KH + 32 * kk, 16));
    wg_commit();
}

// Keeps v's registers live (and unmoved) up to here: the A operands of a wgmma in flight until its wait.
__device__ __forceinline__ void keep(unsigned (*v)[4]) {
#pragma unroll
    for (int i = 0; i < BN / 16; i++)
        asm volatile("" : "+r"(v[i][0]), "+r"(v[i][1]), "+r"(v[i][2]), "+r"(v[i][3]) :: "memory");
}

template <class T>
__device__ __forceinline__ void prefill(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                                        float scale, T* __restrict__ out, int n_q, int Hq, int Hkv, int start) {
    constexpr bool BF = IsBf16<T>::value;
    extern __shared__ __align__(16) unsigned char kreg_dyn[];
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(kreg_dyn);
    const unsigned qs = (sraw + 1023) & ~1023u, kvs = qs + 2 * QH;
    const int tid = threadIdx.x, wg = tid >> 7, w = (tid >> 5) & 3, lane = tid & 31, gr = lane >> 2, tq = lane & 3;
    const int t0 = (KREG_LONGEST_FIRST ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM, h = blockIdx.y;
    const int g = (int)((unsigned)h / ((unsigned)Hq / (unsigned)Hkv));
    const int n_keys = start + min(t0 + BM, n_q);            // keys 0 .. n_keys - 1 are seen by some row
    const int tiles = (n_keys + BN - 1) / BN;
    const float sl2 = scale * 1.4426950408889634f;
    constexpr int AHEAD = KREG_PIPE ? STAGES - 2 : STAGES - 1;   // tiles in flight beyond the current one's

    // Q rows t0 .. t0 + 127 (zeros past T), with K/V tiles 0 .. AHEAD - 1 in the first commit groups
#pragma unroll
    for (int p = 0; p < (KREG_QREG ? 0 : BM * 16 / NT); p++) {
        const int v = tid + NT * p, r = v >> 4, ch = v & 15;
        const bool ok = t0 + r < n_q;
        cp_async16(qs + (ch >> 3) * QH + swz(r, ch & 7), q + (ok ? ((long long)(t0 + r) * Hq + h) * D + 8 * ch : 0), ok);
    }
#pragma unroll
    for (int s = 0; s < AHEAD; s++) {
        if (s < tiles) {
            load_kv<T>(kvs + s * STAGE, kc, s * BN, n_keys, Hkv, g, tid);
            load_kv<T>(kvs + s * STAGE + 2 * KH, vc, s * BN, n_keys, Hkv, g, tid);
        }
        cp_commit();
    }
    // tile j's copies landed (wait until AHEAD - 1 groups are pending), visible to the async proxy; every
    // warpgroup past the barrier; then tile j + AHEAD's copies into its stage (read last by tile j + AHEAD - STAGES)
    auto next_tile = [&](int j) {
        if constexpr (AHEAD >= 2) cp_wait<AHEAD - 1>();
        else cp_wait<0>();
        proxy_fence();
        __syncthreads();
        const int nx = j + AHEAD;
        if (nx < tiles) {
            const unsigned st = kvs + (nx % STAGES) * STAGE;
            load_kv<T>(st, kc, nx * BN, n_keys, Hkv, g, tid);
            load_kv<T>(st + 2 * KH, vc, nx * BN, n_keys, Hkv, g, tid);
        }
        cp_commit();
    };

    const int r0 = t0 + 16 * (tid >> 5) + gr;                 // this thread's rows r0 and r0 + 8 (warp tid / 32 = 4 wg + w)
    const int qpos0 = start + r0, qpos1 = qpos0 + 8;
    const int wlo = start + t0 + 64 * wg;                     // the warpgroup's first query position
    const int wlo_warp = wlo + 16 * w;                        // the warp's
    const int live = min(tiles, (wlo + 63) / BN + 1);         // tiles 0 .. live - 1 hold a key the warpgroup sees
    float o[64];
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.f;
    float m0 = -KREG_INF, m1 = -KREG_INF, l0 = 0.f, l1 = 0.f, c0, c1;
#if KREG_QREG
    // Q of rows r0, r0 + 8 as the A fragments of the 8 k16 steps (dims 16 kk + 2 tq (+ 1, + 8)); zeros past T
    unsigned qa[8][4];
    {
        const bool in0 = r0 < n_q, in1 = r0 + 8 < n_q;
        const unsigned* q0 = reinterpret_cast<const unsigned*>(q + ((long long)(in0 ? r0 : 0) * Hq + h) * D);
        const unsigned* q1 = reinterpret_cast<const unsigned*>(q + ((long long)(in1 ? r0 + 8 : 0) * Hq + h) * D);
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            qa[kk][0] = in0 ? q0[kk * 8 + tq] : 0u;
            qa[kk][1] = in1 ? q1[kk * 8 + tq] : 0u;
            qa[kk][2] = in0 ? q0[kk * 8 + 4 + tq] : 0u;
            qa[kk][3] = in1 ? q1[kk * 8 + 4 + tq] : 0u;
        }
    }
#else
    const unsigned qa = qs + wg * 64 * 128;
#endif
    unsigned ph[BN / 16][4], pl[BN / 16][4];

#if !KREG_PIPE
#pragma unroll 1
    for (int j = 0; j < tiles; j++) {
        next_tile(j);
        const unsigned ks = kvs + (j % STAGES) * STAGE, vs = ks + 2 * KH;
        if (j >= live) continue;                             // warpgroup-uniform
        float s[BN / 2];
        scores<BF>(s, qa, ks);
        wg_wait0();
        if (softmax_tile<T>(s, j * BN + 2 * tq, j * BN + BN - 1 > wlo_warp, qpos0, qpos1, sl2, m0, m1, l0, l1, c0, c1, ph, pl))
            rescale(o, c0, c1);
        wg_fence();
        pv<BF>(o, ph, pl, vs);
        wg_commit();
        wg_wait0();
    }
#else
    // tile 0: S(0), softmax into P. Step j = 1 .. live - 1: S(j) = Q K(j)^T issued, then O += P(j - 1) V(j - 1)
    // (P in registers), each its own commit group; S(j) retired (wait_group 1), softmax of tile j into the
    // second P buffer while P V runs; P V retired, o rescaled. Step live: the last P V. Every branch issues
    // and retires its own wgmmas (ptxas keeps them asynchronous: nothing in flight across a divergent path);
    // every thread passes the same barrier sites equally often (bar.sync is .aligned).
    // KREG_PINGPONG: each turn (tile 0, then one per step j = 1 .. tiles) of warpgroup g issues after barrier
    // 1 + g, which the other warpgroup arrives at after its issue (warpgroup 1 once before the first turn,
    // warpgroup 0 syncs once after the last: every arrival consumed)
#if KREG_PINGPONG
    if (wg == 1) named_arrive(1, 256);
#define KREG_TURN_BEGIN named_sync(1 + wg, 256)
#define KREG_TURN_END named_arrive(2 - wg, 256)
#else
#define KREG_TURN_BEGIN
#define KREG_TURN_END
#endif
    {
        float s[BN / 2];
        next_tile(0);
        KREG_TURN_BEGIN;
        scores<BF>(s, qa, kvs);
        KREG_TURN_END;
        wg_wait0();
        softmax_tile<T>(s, 2 * tq, BN - 1 > wlo_warp, qpos0, qpos1, sl2, m0, m1, l0, l1, c0, c1, ph, pl);
    }
#pragma unroll 1
    for (int j = 1; j <= tiles; j++) {
        if (j < tiles) next_tile(j);
        KREG_TURN_BEGIN;
        if (j < live) {
            float s[BN / 2];
            scores<BF>(s, qa, kvs + (j % STAGES) * STAGE);
            pv<BF>(o, ph, pl, kvs + ((j - 1) % STAGES) * STAGE + 2 * KH);
            wg_commit();
            KREG_TURN_END;
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            unsigned nh[BN / 16][4], nl[BN / 16][4];
            const bool moved = softmax_tile<T>(s, j * BN + 2 * tq, j * BN + BN - 1 > wlo_warp, qpos0, qpos1, sl2,
                                               m0, m1, l0, l1, c0, c1, nh, nl);
            wg_wait0();
            keep(ph);
            keep(pl);
            if (moved) rescale(o, c0, c1);
#pragma unroll
            for (int i = 0; i < BN / 16; i++)
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    ph[i][k] = nh[i][k];
                    pl[i][k] = nl[i][k];
                }
        } else if (j == live) {
            wg_fence();
            pv<BF>(o, ph, pl, kvs + ((j - 1) % STAGES) * STAGE + 2 * KH);
            wg_commit();
            KREG_TURN_END;
            wg_wait0();
            keep(ph);
            keep(pl);
        } else {
            KREG_TURN_END;
        }
    }
#if KREG_PINGPONG
    if (wg == 0) named_sync(1, 256);
#endif
#undef KREG_TURN_BEGIN
#undef KREG_TURN_END
#endif
    cp_wait<0>();

#pragma unroll
    for (int x = 1; x <= 2; x <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, x);
        l1 += __shfl_xor_sync(0xffffffffu, l1, x);
    }
    // o[4 d + c]: row r0 (c < 2) or r0 + 8, dim 8 d + 2 tq + (c & 1). Per row half hf and group of 4 dim
    // tiles (dims 32 jg ..): a 4 x 4 transpose of words within the quad leaves lane tq 8 consecutive dims
    const float inv[2] = {1.f / l0, 1.f / l1};
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const int row = r0 + 8 * hf;
#pragma unroll
        for (int jg = 0; jg < 4; jg++) {
            unsigned wd[4], u[4] = {0u, 0u, 0u, 0u};
#pragma unroll
            for (int jj = 0; jj < 4; jj++)
                wd[jj] = kreg::Cvt<T>::pack(o[4 * (4 * jg + jj) + 2 * hf] * inv[hf], o[4 * (4 * jg + jj) + 2 * hf + 1] * inv[hf]);
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int m = tq ^ r;
                const unsigned mine = m == 0 ? wd[0] : m == 1 ? wd[1] : m == 2 ? wd[2] : wd[3];
                const unsigned got = r ? __shfl_xor_sync(0xffffffffu, mine, r) : mine;
                u[0] = m == 0 ? got : u[0];
                u[1] = m == 1 ? got : u[1];
                u[2] = m == 2 ? got : u[2];
                u[3] = m == 3 ? got : u[3];
            }
            if (row < n_q) st_global_v4(out + ((long long)row * Hq + h) * D + 32 * jg + 8 * tq, u);
        }
    }
}

// The layout probe: one warpgroup; A [64][BN] (row-major, global) into A fragments, B [BN][128] (row-major:
// keys x dims, as V) into a V stage; BN / 16 chained wgmma RS transpose-b steps; acc[t * 64 + i] = register i of thread t.
template <class T>
__device__ __forceinline__ void probe(const T* __restrict__ a, const T* __restrict__ b, float* __restrict__ acc) {
    constexpr bool BF = IsBf16<T>::value;
    extern __shared__ __align__(16) unsigned char kreg_dyn[];
    const unsigned vs = ((unsigned)__cvta_generic_to_shared(kreg_dyn) + 1023) & ~1023u;
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31, gr = lane >> 2, tq = lane & 3;
    load_kv<T, 128>(vs, b, 0, BN, 1, 0, tid);
    cp_commit();
    const unsigned* a32 = reinterpret_cast<const unsigned*>(a);
    unsigned ph[BN / 16][4], pl[BN / 16][4];
#pragma unroll
    for (int kv = 0; kv < BN / 16; kv++) {
        const int r = 16 * w + gr, c = 16 * kv + 2 * tq;        // element (r, c) and (r, c + 1) in one word
        ph[kv][0] = a32[(r * BN + c) / 2];
        ph[kv][1] = a32[((r + 8) * BN + c) / 2];
        ph[kv][2] = a32[(r * BN + c + 8) / 2];
        ph[kv][3] = a32[((r + 8) * BN + c + 8) / 2];
        pl[kv][0] = pl[kv][1] = pl[kv][2] = pl[kv][3] = 0u;    // zeros: the lo steps add nothing
    }
    cp_wait<0>();
    proxy_fence();
    __syncthreads();
    float o[64];
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.f;
    wg_fence();
    pv<BF>(o, ph, pl, vs);
    wg_commit();
    wg_wait0();
#pragma unroll
    for (int i = 0; i < 64; i++) acc[tid * 64 + i] = o[i];
}

}  // namespace

#define ENTRY(NAME, PROBE, T)                                                                                     \
    extern "C" __global__ void __launch_bounds__(NT, KREG_MINB) NAME(                                         \
        const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache, float scale,   \
        T* __restrict__ out, int T_, int Hq, int Hkv, int start) {                                           \
        prefill<T>(q, k_cache, v_cache, scale, out, T_, Hq, Hkv, start);                                     \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(128) PROBE(const T* __restrict__ a, const T* __restrict__ b, \
                                                            float* __restrict__ acc) {                        \
        probe<T>(a, b, acc);                                                                                  \
    }
ENTRY(attention_prefill_wg_bf16, attention_prefill_wg_probe_bf16, __nv_bfloat16)
ENTRY(attention_prefill_wg_f16, attention_prefill_wg_probe_f16, __half)
