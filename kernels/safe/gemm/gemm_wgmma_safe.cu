// Safe Hopper GEMM (entries gemm_wgs_bf16 / gemm_wgs_f16, then gemm_wgs_ragged_bf16 / _f16): Y = X W^T
// with warpgroup MMA (wgmma.mma_async.m64nBNk16, fp32 accumulators, A and B read from shared memory
// through 128-byte-swizzle matrix descriptors), one rounding to DT. Written for a proof that closes for
// all dims (checker/semantics.py models wgmma's shared reads as pending from issue to the wait_group that
// retires them, and generic writes as invisible to them until a fence.proxy.async):
// gemm_wgs (N % 8 == 0; returns at once otherwise): block (bx, by) of two warpgroups owns the 128 x BN tile of Y
// at rows t0 = 128 bx (T tiles fastest: the blocks in flight share W tiles), columns n0 = BN by; warpgroup g
// rows 64 g .. 64 g + 63, all BN columns (BN / 2 accumulators a thread). Stages in dynamic shared memory
// (X [128][64] and W [BN][64] a stage, rows of 128 bytes in the canonical K-major 128-byte-swizzle layout,
// 16-byte chunk c of row r at chunk c ^ (r & 7), stages 1024-byte aligned at static addresses: one loop
// iteration a round of steps, no stage index for the prover to track); K in steps of 64.
// KREG_PIPE=1 (registered: BN 256, KREG_STAGES 4; launch shared STAGES (128 + BN) 128 + 1024 bytes): a step
// waits for its own tile's copies (cp.async.wait_group STAGES - 3), fence.proxy.async, barrier, copies the tile
// STAGES - 2 steps ahead into the stage the wgmmas of two steps ago read (retired by every warpgroup's
// wait_group 1 of the step before, ahead of this barrier), issues its four wgmmas and commits them, and
// wgmma.wait_group 1: its wgmmas run on while the next step's are issued, across the loop's back edge too
// (prover-0.12 bounds what is in flight there by the next iteration's waits). Tiles past K are zero-filled
// copies (src-size 0) and their wgmmas add zeros. One barrier a step, no tensor-core bubble: on the H100,
// Qwen3-4B layer at T = 2048, 78.5% / 80.0% of cuBLAS at 128 x 256 (two runs, bench/results/gemm_wgpipe_dev_2026-11-24.txt;
// per shape 0.93 qkv, 0.61 o, 0.91 gate-up, 0.65 down: N = 2560 is 1.2 waves of 128 x 256 tiles on 132 SMs);
// every structure with wgmma.wait_group 0 + barrier a step lands at 50-65% (the unsafe gemm_wgmma too).
// Proof (prover-0.12, 30 s budget): 20-24 s of solver work a dtype, both launches (bench/prover_profile.py).
// Unregistered: the default (two register-staged stages, loads one step ahead, wait_group 0 a step);
// KREG_DEEP=1: two register sets, loads two steps ahead (55%); KREG_ASYNC=1: KREG_STAGES cp.async stages with
// wait_group 0 a step; KREG_TRI=1 / KREG_RS=1: three register-staged stages with wait_group 1 (47% / 46%: the
// register-staged loads stall the issuing threads).
// Epilogue from registers: the accumulator layout per 8-column tile is mma.sync's m16n8 one, so the quads'
// 4 x 4 word transpose of gemm_tc gives each lane 8 consecutive columns: 16-byte stores inside N.
// gemm_wgs_ragged (N % 8 != 0; its blocks return at once otherwise): gemm_tc's 64 x 64 fp32 FMA tiles.
// Each element of Y is written by one thread of one of the two launches; X and W are only read; every
// thread reaches every barrier and every wgmma. Target sm_90a (--gpu-architecture=compute_90a).
#include "kreg_own.cuh"

#ifndef KREG_BN
#define KREG_BN 160
#endif
#ifndef KREG_MINB
#define KREG_MINB 1    // __launch_bounds__' minimum blocks per SM of the gemm_wgs entries
#endif
#ifndef KREG_ASYNC
#define KREG_ASYNC 0   // 1: KREG_STAGES stages (static addresses, one loop iteration a round of them) filled by
                       // cp.async STAGES - 1 steps ahead instead of the register-staged pair of stages
#endif
#ifndef KREG_DEEP
#define KREG_DEEP 0    // 1: two register sets, each step's loads two steps ahead (stored one step later)
#endif
#ifndef KREG_TRI
#define KREG_TRI 0     // 1: three register-staged stages, steps in triples, wgmma.wait_group 1 between the steps of a
                       // triple (a step's wgmmas run on while the next are issued), 0 at its end
#endif
#ifndef KREG_PIPE
#define KREG_PIPE 0    // 1: KREG_STAGES static stages filled by cp.async STAGES - 2 steps ahead, one barrier a step,
                       // wgmma.wait_group 1 every step (a step's wgmmas run on while the next are issued)
#endif
#ifndef KREG_MMA_FIRST
#define KREG_MMA_FIRST 0   // 1 (KREG_PIPE): a step issues its wgmmas before its copies
#endif
#ifndef KREG_RS
#define KREG_RS 0      // 1: three register-staged stages, two register sets (loads two steps ahead), six steps an
                       // iteration, one barrier a step, wgmma.wait_group 1 every step
#endif
#ifndef KREG_STAGES
#define KREG_STAGES 3
#endif
constexpr int BM = 128, BN = KREG_BN, BK = 64, THREADS = 256,
              STAGES = (KREG_ASYNC || KREG_PIPE) ? KREG_STAGES : (KREG_RS || KREG_TRI) ? 3 : 2;
static_assert(!KREG_PIPE || STAGES >= 3, "a stage is refilled two steps after the wgmmas that read it were issued");
constexpr int X_BYTES = BM * 128, STAGE_BYTES = (BM + BN) * 128;
constexpr int XV = BM * 8 / THREADS, WV = BN * 8 / THREADS;     // 16-byte chunks of each tile per thread
constexpr int NACC = BN / 2;                                     // fp32 accumulators a thread
static_assert(BN == 64 || BN == 128 || BN == 160 || BN == 192 || BN == 224 || BN == 256, "the wgmma shapes below (widths in 32s: the epilogue's quads of 8-column tiles)");

template <bool BF> __device__ __forceinline__ void wgmma_n64(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "n"(1));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "n"(1));
}
template <bool BF> __device__ __forceinline__ void wgmma_n128(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db), "n"(1));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db), "n"(1));
}
template <bool BF> __device__ __forceinline__ void wgmma_n160(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, %82, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n160k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, %80, %81, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
                     : "l"(da), "l"(db), "n"(1));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, %82, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n160k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, %80, %81, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
                     : "l"(da), "l"(db), "n"(1));
}
template <bool BF> __device__ __forceinline__ void wgmma_n192(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, %98, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                     : "l"(da), "l"(db), "n"(1));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, %98, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                     : "l"(da), "l"(db), "n"(1));
}
template <bool BF> __device__ __forceinline__ void wgmma_n224(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, %114, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n224k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111}, %112, %113, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
                     : "l"(da), "l"(db), "n"(1));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, %114, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n224k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111}, %112, %113, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
                     : "l"(da), "l"(db), "n"(1));
}
template <bool BF> __device__ __forceinline__ void wgmma_n256(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BF)
        asm volatile("{.reg .pred p; setp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                     : "l"(da), "l"(db), "n"(1));
    else
        asm volatile("{.reg .pred p; setp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                     : "l"(da), "l"(db), "n"(1));
}

template <class T> struct IsBf16 { static constexpr bool value = false; };
template <> struct IsBf16<__nv_bfloat16> { static constexpr bool value = true; };

// A K-major operand in the 128-byte swizzle layout at shared address addr (1024-byte aligned tile, plus
// 32 bytes per k16 step): start >> 4 (bits 0-13), LBO 16 bytes (unused by this layout, bits 16-29),
// SBO 1024 bytes between 8-row groups (bits 32-45), swizzle mode 1 = 128B (bits 62-63).
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

template <bool BF> __device__ __forceinline__ void wgmma_tile(float* d, unsigned long long da, unsigned long long db) {
    if constexpr (BN == 256) wgmma_n256<BF>(d, da, db);
    else if constexpr (BN == 224) wgmma_n224<BF>(d, da, db);
    else if constexpr (BN == 192) wgmma_n192<BF>(d, da, db);
    else if constexpr (BN == 160) wgmma_n160<BF>(d, da, db);
    else if constexpr (BN == 128) wgmma_n128<BF>(d, da, db);
    else wgmma_n64<BF>(d, da, db);
}

// The byte offset of (row r, 16-byte chunk c) in a 128-byte-swizzled tile.
__device__ __forceinline__ unsigned swz(int r, int c) { return r * 128 + 16 * (c ^ (r & 7)); }

__device__ __forceinline__ void st_shared_v4(unsigned a, const uint4& v) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// This thread's chunks of the X and W tiles at k0 (chunk v = threadIdx.x + 256 h: row v / 8, k0 + 8 (v % 8);
// zeros past T, N or K).
template <class T>
__device__ __forceinline__ void load_step(uint4 (&xv)[XV], uint4 (&wv)[WV], const T* __restrict__ X,
                                          const T* __restrict__ W, long long t0, long long n0, int Tn, int N,
                                          int K, int k0) {
#pragma unroll
    for (int h = 0; h < XV; h++) {
        int v = threadIdx.x + THREADS * h, r = v >> 3, k = k0 + 8 * (v & 7);
        xv[h] = make_uint4(0, 0, 0, 0);
        if (t0 + r < Tn && k < K) xv[h] = kreg::load_raw<T>(X + (t0 + r) * K + k);
    }
#pragma unroll
    for (int h = 0; h < WV; h++) {
        int v = threadIdx.x + THREADS * h, r = v >> 3, k = k0 + 8 * (v & 7);
        wv[h] = make_uint4(0, 0, 0, 0);
        if (n0 + r < N && k < K) wv[h] = kreg::load_raw<T>(W + (n0 + r) * K + k);
    }
}

// This thread's chunks into the stage at shared address st (swizzled), then fence.proxy.async: the stores
// become visible to the wgmmas (async proxy) that a later barrier orders after them.
__device__ __forceinline__ void store_step(unsigned st, const uint4 (&xv)[XV], const uint4 (&wv)[WV]) {
#pragma unroll
    for (int h = 0; h < XV; h++) {
        int v = threadIdx.x + THREADS * h;
        st_shared_v4(st + swz(v >> 3, v & 7), xv[h]);
    }
#pragma unroll
    for (int h = 0; h < WV; h++) {
        int v = threadIdx.x + THREADS * h;
        st_shared_v4(st + X_BYTES + swz(v >> 3, v & 7), wv[h]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// The four wgmmas of one k tile (stage at shared address st) for warpgroup wg, one commit group.
template <bool BF>
__device__ __forceinline__ void mma_step(float* acc, unsigned st, int wg) {
    const unsigned xs = st + wg * 64 * 128, ws = st + X_BYTES;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) wgmma_tile<BF>(acc, sw128_desc(xs + 32 * kk), sw128_desc(ws + 32 * kk));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }

template <class T>
__device__ __forceinline__ void st_global_v4(T* p, const unsigned (&u)[4]) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3])
                 : "memory");
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}

// KREG_ASYNC: this thread's chunks of the X and W tiles at k0 copied into the stage at st (zero-filled past T,
// N or K, with X / W itself as the unread source there: an offset selected, no branch), one commit group.
template <class T>
__device__ __forceinline__ void copy_step(unsigned st, const T* __restrict__ X, const T* __restrict__ W, long long t0,
                                          long long n0, int Tn, int N, int K, int k0) {
#pragma unroll
    for (int h = 0; h < XV; h++) {
        int v = threadIdx.x + THREADS * h, r = v >> 3, k = k0 + 8 * (v & 7);
        bool ok = t0 + r < Tn && k < K;
        cp_async16(st + swz(r, v & 7), X + (ok ? (t0 + r) * K + k : 0), ok);
    }
#pragma unroll
    for (int h = 0; h < WV; h++) {
        int v = threadIdx.x + THREADS * h, r = v >> 3, k = k0 + 8 * (v & 7);
        bool ok = n0 + r < N && k < K;
        cp_async16(st + X_BYTES + swz(r, v & 7), W + (ok ? (n0 + r) * K + k : 0), ok);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// KREG_ASYNC: one round of STAGES k steps from k0, step j on stage j: its copies landed (the round's first
// step waits for every copy: the loop's header), fence.proxy.async, barrier (everyone's copies landed and
// every wgmma of the step before retired), issue its wgmmas (none past K), copy step j + STAGES - 1 into the
// stage the step before read, wait_group 0.
template <bool BF, class T>
__device__ __forceinline__ void async_round(float* acc, unsigned s0, const T* __restrict__ X, const T* __restrict__ W,
                                            long long t0, long long n0, int Tn, int N, int K, int k0, int wg) {
#pragma unroll
    for (int j = 0; j < STAGES; j++) {
        if (j == 0) asm volatile("cp.async.wait_all;" ::: "memory");
        else asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (k0 + j * BK < K) mma_step<BF>(acc, s0 + j * STAGE_BYTES, wg);
        copy_step(s0 + ((j + STAGES - 1) % STAGES) * STAGE_BYTES, X, W, t0, n0, Tn, N, K, k0 + (j + STAGES - 1) * BK);
        wgmma_wait0();
    }
}

// KREG_PIPE: one round of STAGES k steps from k0, step j on stage j: this thread's copies of tile j landed
// (cp.async.wait_group STAGES - 3), fence.proxy.async, barrier (every thread's copies of tile j landed and are
// visible to the async proxy; every warpgroup's wait_group 1 of the step before retired the wgmmas of step
// j - 2), copy tile j + STAGES - 2 into stage (j - 2) mod STAGES, issue tile j's wgmmas (zero tiles past K),
// wgmma.wait_group 1 (the step before's are retired; this step's run on).
template <bool BF, class T>
__device__ __forceinline__ void pipe_round(float* acc, unsigned s0, const T* __restrict__ X, const T* __restrict__ W,
                                           long long t0, long long n0, int Tn, int N, int K, int k0, int wg) {
#pragma unroll
    for (int j = 0; j < STAGES; j++) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 3) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
#if KREG_MMA_FIRST
        mma_step<BF>(acc, s0 + j * STAGE_BYTES, wg);
        copy_step(s0 + ((j + STAGES - 2) % STAGES) * STAGE_BYTES, X, W, t0, n0, Tn, N, K, k0 + (j + STAGES - 2) * BK);
#else
        copy_step(s0 + ((j + STAGES - 2) % STAGES) * STAGE_BYTES, X, W, t0, n0, Tn, N, K, k0 + (j + STAGES - 2) * BK);
        mma_step<BF>(acc, s0 + j * STAGE_BYTES, wg);
#endif
        wgmma_wait1();
    }
}

// KREG_RS: step j of six (global step s = k0 / BK + j) on stage j % 3: register set j % 2 takes tile s + 2, issue
// tile s's wgmmas, store set (j + 1) % 2 (tile s + 1, loaded a step ago) into stage (j + 1) % 3 (read by the
// wgmmas of step s - 2, retired by the wait_group 1 of step s - 1 before its barrier), fence.proxy.async,
// wgmma.wait_group 1, barrier.
template <bool BF, class T>
__device__ __forceinline__ void rs_step(float* acc, unsigned s0, uint4 (&xl)[XV], uint4 (&wl)[WV], const uint4 (&xs)[XV],
                                        const uint4 (&ws)[WV], const T* __restrict__ X, const T* __restrict__ W,
                                        long long t0, long long n0, int Tn, int N, int K, int k, int j, int wg) {
    load_step(xl, wl, X, W, t0, n0, Tn, N, K, k + 2 * BK);
    mma_step<BF>(acc, s0 + (j % 3) * STAGE_BYTES, wg);
    store_step(s0 + ((j + 1) % 3) * STAGE_BYTES, xs, ws);
    wgmma_wait1();
    __syncthreads();
}

template <class T>
__device__ __forceinline__ void gemm_wgs(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                         int Tn, int N, int K) {
    constexpr bool BF = IsBf16<T>::value;
    extern __shared__ __align__(1024) unsigned char gemm_wgs_smem[];
    if (N % 8 != 0) return;                              // gemm_wgs_ragged's case (uniform: before any barrier)
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(gemm_wgs_smem);
    const unsigned s0 = (sraw + 1023) & ~1023u, s1 = s0 + STAGE_BYTES;   // the swizzle works on address bits 4-9
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31;
    const long long t0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] = 0.f;
#if KREG_ASYNC
#pragma unroll
    for (int j = 0; j < STAGES - 1; j++) copy_step(s0 + j * STAGE_BYTES, X, W, t0, n0, Tn, N, K, j * BK);
#pragma unroll 1
    for (int k0 = 0; k0 < K; k0 += STAGES * BK) async_round<BF>(acc, s0, X, W, t0, n0, Tn, N, K, k0, wg);
    asm volatile("cp.async.wait_all;" ::: "memory");      // the last (zero-filled) copies
    (void)s1;
#elif KREG_PIPE
#pragma unroll
    for (int j = 0; j < STAGES - 2; j++) copy_step(s0 + j * STAGE_BYTES, X, W, t0, n0, Tn, N, K, j * BK);
#pragma unroll 1
    for (int k0 = 0; k0 < K; k0 += STAGES * BK) pipe_round<BF>(acc, s0, X, W, t0, n0, Tn, N, K, k0, wg);
    wgmma_wait0();
    asm volatile("cp.async.wait_all;" ::: "memory");      // the last (zero-filled) copies
    (void)s1;
#elif KREG_RS
    uint4 xa[XV], wa[WV], xb[XV], wb[WV];
    load_step(xa, wa, X, W, t0, n0, Tn, N, K, 0);
    store_step(s0, xa, wa);
    load_step(xb, wb, X, W, t0, n0, Tn, N, K, BK);
    __syncthreads();
#pragma unroll 1
    for (int k0 = 0; k0 < K; k0 += 6 * BK) {
        rs_step<BF>(acc, s0, xa, wa, xb, wb, X, W, t0, n0, Tn, N, K, k0, 0, wg);
        rs_step<BF>(acc, s0, xb, wb, xa, wa, X, W, t0, n0, Tn, N, K, k0 + BK, 1, wg);
        rs_step<BF>(acc, s0, xa, wa, xb, wb, X, W, t0, n0, Tn, N, K, k0 + 2 * BK, 2, wg);
        rs_step<BF>(acc, s0, xb, wb, xa, wa, X, W, t0, n0, Tn, N, K, k0 + 3 * BK, 3, wg);
        rs_step<BF>(acc, s0, xa, wa, xb, wb, X, W, t0, n0, Tn, N, K, k0 + 4 * BK, 4, wg);
        rs_step<BF>(acc, s0, xb, wb, xa, wa, X, W, t0, n0, Tn, N, K, k0 + 5 * BK, 5, wg);
    }
    wgmma_wait0();
    (void)s1;
#elif KREG_TRI
    // step j of a triple on stage j: load tile j + 1, issue tile j's wgmmas (zero tiles past K: a wgmma skipped
    // under a branch left the compiler moving accumulators still in flight), store tile j + 1 into
    // stage j + 1 (read by the wgmmas of step j - 2, retired by step j - 1's wait_group 1 or the last triple's
    // wait_group 0 before a barrier), fence.proxy.async, wait_group 1 (0 at the triple's end), barrier
    const unsigned s2 = s1 + STAGE_BYTES;
    uint4 xv[XV], wv[WV];
    load_step(xv, wv, X, W, t0, n0, Tn, N, K, 0);
    store_step(s0, xv, wv);
    __syncthreads();
#pragma unroll 1
    for (int k0 = 0; k0 < K; k0 += 3 * BK) {
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + BK);
        mma_step<BF>(acc, s0, wg);
        store_step(s1, xv, wv);
        wgmma_wait1();
        __syncthreads();
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + 2 * BK);
        mma_step<BF>(acc, s1, wg);
        store_step(s2, xv, wv);
        wgmma_wait1();
        __syncthreads();
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + 3 * BK);
        mma_step<BF>(acc, s2, wg);
        store_step(s0, xv, wv);
        wgmma_wait0();
        __syncthreads();
    }
#elif KREG_DEEP
    // at step s: stage s % 2 holds tile s, one register set tile s + 1; load tile s + 2 into the other set,
    // issue the wgmmas, store tile s + 1 into the other stage (its loads were issued a step ago)
    uint4 xa[XV], wa[WV], xb[XV], wb[WV];
    load_step(xb, wb, X, W, t0, n0, Tn, N, K, 0);
    store_step(s0, xb, wb);
    load_step(xa, wa, X, W, t0, n0, Tn, N, K, BK);
    __syncthreads();
#pragma unroll 1
    for (int k0 = 0; k0 < K; k0 += 2 * BK) {
        load_step(xb, wb, X, W, t0, n0, Tn, N, K, k0 + 2 * BK);
        mma_step<BF>(acc, s0, wg);
        store_step(s1, xa, wa);
        wgmma_wait0();
        __syncthreads();
        load_step(xa, wa, X, W, t0, n0, Tn, N, K, k0 + 3 * BK);
        mma_step<BF>(acc, s1, wg);
        store_step(s0, xb, wb);
        wgmma_wait0();
        __syncthreads();
    }
#else
    uint4 xv[XV], wv[WV];
    load_step(xv, wv, X, W, t0, n0, Tn, N, K, 0);
    store_step(s0, xv, wv);
    __syncthreads();
#pragma unroll 1
    for (int k0 = 0; k0 < K; k0 += 2 * BK) {
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + BK);
        mma_step<BF>(acc, s0, wg);
        store_step(s1, xv, wv);
        wgmma_wait0();
        __syncthreads();
        load_step(xv, wv, X, W, t0, n0, Tn, N, K, k0 + 2 * BK);
        mma_step<BF>(acc, s1, wg);
        store_step(s0, xv, wv);
        wgmma_wait0();
        __syncthreads();
    }
#endif
    // accumulator 4 j + h2: row 16 warp + lane / 4 (+ 8 if h2 >= 2), column 8 j + 2 (lane % 4) + h2 % 2 of the
    // warpgroup's 64 x BN tile (mma.sync's m16n8 layout per 8-column tile j). A 4 x 4 transpose of words within
    // the quad (round r: lane tq sends its word of tile tq ^ r to lane tq ^ r) leaves lane tq the 8 consecutive
    // columns of tile 4 jg + tq: one 16-byte store where they are inside N (all 8 or none: N % 8 == 0).
    const int g = lane >> 2, tq = lane & 3;
    const int rw = 16 * (threadIdx.x >> 5) + g;          // 64 wg + 16 warp + g (one shift: the prover's integer view)
    unsigned pk[BN / 4];                                 // word 2 j + h: tile j's row g + 8 h, columns 2 tq, + 1
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) pk[2 * j + h] = kreg::Cvt<T>::pack(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    // 32 columns an iteration (a loop, not unrolled: two stores for the prover instead of BN / 16), the next
    // group's words moved down after it (static register indices)
#pragma unroll 1
    for (int jg = 0; jg < BN / 32; jg++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            unsigned u[4] = {0, 0, 0, 0};
#pragma unroll
            for (int r = 0; r < 4; r++) {
                int m = tq ^ r;
                unsigned mine = m == 0 ? pk[h] : m == 1 ? pk[2 + h] : m == 2 ? pk[4 + h] : pk[6 + h];
                unsigned got = r ? __shfl_xor_sync(0xffffffffu, mine, r) : mine;
                u[0] = m == 0 ? got : u[0];
                u[1] = m == 1 ? got : u[1];
                u[2] = m == 2 ? got : u[2];
                u[3] = m == 3 ? got : u[3];
            }
            long long t = t0 + rw + 8 * h, n = n0 + 32 * jg + 8 * tq;
            if (t < Tn) {
                if (n + 8 <= N) {
                    st_global_v4(Y + t * N + n, u);
                }
            }
        }
#pragma unroll
        for (int i = 0; i + 8 < BN / 4; i++) pk[i] = pk[i + 8];
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, KREG_MINB) gemm_wgs_bf16(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_wgs(X, W, Y, T, N, K);
}

extern "C" __global__ void __launch_bounds__(THREADS, KREG_MINB) gemm_wgs_f16(const __half* __restrict__ X,
        const __half* __restrict__ W, __half* __restrict__ Y, int T, int N, int K) {
    gemm_wgs(X, W, Y, T, N, K);
}

// The ragged-N fallback, gemm_tiled's scheme with 512 threads (8 outputs each: fewer stores to prove):
// block (bx, by) owns the 64 x 64 tile of Y at rows t0 = 64 by, columns n0 = 64 bx; per step of 32 along K,
// threads 0-255 load the X tile's 16-byte vector (row (i % 256) / 4, k + 8 (i % 4)), threads 256-511 the
// W tile's (zeros past T, N or K), a barrier, then thread (ty, tx) = (i / 16, i % 16) accumulates rows
// ty + 32 r, columns tx + 16 c in fp32 FMA; a barrier before the next step.
constexpr int RM = 64, RN = 64, RK = 32, RLD = RK + 8;

template <class T>
__device__ __forceinline__ void gemm_ragged(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                            int Tn, int N, int K) {
    if (N % 8 == 0) return;                  // gemm_wgs's case (uniform: before any barrier)
    __shared__ __align__(16) T xs[RM][RLD];
    __shared__ __align__(16) T ws[RN][RLD];
    int i = threadIdx.x;
    int tx = i % 16, ty = i / 16;
    long long t0 = (long long)blockIdx.y * RM, n0 = (long long)blockIdx.x * RN;
    int lr = i % 256 / 4, lk = 8 * (i % 4);  // the row and k offset of the vector this thread loads
    float acc[2][4];
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int c = 0; c < 4; c++) acc[r][c] = 0.f;
    for (int k0 = 0; k0 < K; k0 += RK) {
        int k = k0 + lk;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (i < 256) {
            if (t0 + lr < Tn && k < K) v = kreg::load_raw<T>(X + (t0 + lr) * K + k);
            *reinterpret_cast<uint4*>(&xs[lr][lk]) = v;
        } else {
            if (n0 + lr < N && k < K) v = kreg::load_raw<T>(W + (n0 + lr) * K + k);
            *reinterpret_cast<uint4*>(&ws[lr][lk]) = v;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < RK; kk += 8) {
            kreg::F8 a[2], b[4];
#pragma unroll
            for (int r = 0; r < 2; r++) a[r] = kreg::unpack8<T>(*reinterpret_cast<const uint4*>(&xs[ty + 32 * r][kk]));
#pragma unroll
            for (int c = 0; c < 4; c++) b[c] = kreg::unpack8<T>(*reinterpret_cast<const uint4*>(&ws[tx + 16 * c][kk]));
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int c = 0; c < 4; c++) acc[r][c] = fmaf(a[r].v[j], b[c].v[j], acc[r][c]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        long long t = t0 + ty + 32 * r;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            long long n = n0 + tx + 16 * c;
            if (t < Tn && n < N) Y[t * N + n] = kreg::Cvt<T>::from(acc[r][c]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(512) gemm_wgs_ragged_bf16(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_ragged(X, W, Y, T, N, K);
}

extern "C" __global__ void __launch_bounds__(512) gemm_wgs_ragged_f16(const __half* __restrict__ X,
        const __half* __restrict__ W, __half* __restrict__ Y, int T, int N, int K) {
    gemm_ragged(X, W, Y, T, N, K);
}
