// Unsafe Hopper GEMM (entries gemm_wgmma_bf16, gemm_wgmma_f16): Y = X W^T with warpgroup MMA
// (wgmma.mma_async.m64nBNk16, fp32 accumulators, A and B read from shared memory through matrix
// descriptors), one rounding to DT. Block tile 128 x BN of two warpgroups (256 threads): warpgroup g owns
// rows 64 g .. 64 g + 63 and all BN columns (BN / 2 fp32 accumulators a thread). K in steps of 64 through
// a STAGES-deep cp.async pipeline; each stage holds X [128][64] and W [BN][64], rows of 128 bytes in the
// canonical K-major 128-byte-swizzle layout (16-byte chunk c of row r at chunk c ^ (r & 7), every tile
// 1024-byte aligned), so a descriptor with SBO = 1024 bytes (8 rows) and its start advanced by 32 bytes
// per k16 step addresses it. Per step s: wait for tile s's copies, fence.proxy.async (the copies are
// generic-proxy writes, wgmma reads through the async proxy), barrier, copy tile s + STAGES - 2 into the
// stage that wgmma(s - 2) read (retired by every warpgroup's wait_group 1 before the barrier), issue
// the four wgmmas of tile s, commit, wait until at most this group is pending (KREG_WS = 1: a third,
// producer warpgroup issues the copies and hands stages over through named barriers, mainloop_ws;
// KREG_PERSIST = 1: that, in persistent blocks whose producer fills the next tile's stages while the
// consumers store the last one's accumulators from registers, gemm_persistent).
// Epilogue: accumulators rounded to DT into a padded shared Y tile, then 16-byte stores. Edges: rows
// past T or N and k past K are zero-filled copies (cp.async src-size 0). Target sm_90a (compile option
// --gpu-architecture=compute_90a). Entries wgmma_probe_{bf16,f16}: one warpgroup, one m64n64 tile over K, the
// raw accumulators per (thread, register): the layout check of bench/wgmma_dev.py and the emulator.
#include "kreg_own.cuh"

#ifndef KREG_BN
#define KREG_BN 256
#endif
#ifndef KREG_STAGES
#define KREG_STAGES 4
#endif
#ifndef KREG_MINB
#define KREG_MINB 1    // __launch_bounds__' minimum blocks per SM
#endif
#ifndef KREG_L2PF
#define KREG_L2PF 0    // 1: cp.async with the .L2::256B prefetch hint
#endif
#ifndef KREG_PERSIST
#define KREG_PERSIST 0 // 1: persistent blocks (grid min(tiles, 132)) walk tiles; implies KREG_WS
#endif
#ifndef KREG_WAIT0
#define KREG_WAIT0 0   // 1 (a measurement, bench/wgs_pipe.py): wgmma.wait_group 0 each step of mainloop_shared, no overlap
#endif
#ifndef KREG_WS
#define KREG_WS KREG_PERSIST // 1: a third, producer warpgroup issues the copies (named barriers hand stages over)
#endif
constexpr int BM = 128, BN = KREG_BN, BK = 64, STAGES = KREG_STAGES, CONSUMERS = 256;
constexpr int THREADS = KREG_WS ? CONSUMERS + 128 : CONSUMERS;
constexpr int LOADERS = KREG_WS ? 128 : CONSUMERS;               // threads that issue a stage's copies
constexpr int XV = BM * 8 / LOADERS, WV = BN * 8 / LOADERS;     // 16-byte chunks a loader copies per stage
static_assert(!KREG_WS || 2 * STAGES + 1 < 16, "named barriers: full and empty per stage, one for the epilogue");
static_assert(!KREG_PERSIST || KREG_WS, "the persistent kernel has a producer warpgroup");
constexpr int X_BYTES = BM * 128, STAGE_BYTES = (BM + BN) * 128;
constexpr int YLD = BN + 8;                                      // padded Y row (elements)
constexpr int NACC = BN / 2;                                     // fp32 accumulators a thread
static_assert(STAGES >= 3 && BN % 32 == 0 && BN <= 256 && (BN * 8) % LOADERS == 0, "tile shapes");
static_assert(STAGES * STAGE_BYTES >= BM * YLD * 2, "the Y tile must fit in the stages' shared memory");

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

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
#if KREG_L2PF      // with an L2 prefetch of the whole 256-byte sector group (the next rows' chunks)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0));
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0));
#endif
}

// Tile `tile` (k0 = 64 tile) of X rows t0.. and W rows n0.. into the stage at shared address st (zero
// past T, N or K) by loader lt of LOADERS, then one commit group; a tile past the last is an empty group.
template <class T>
__device__ __forceinline__ void load_stage(unsigned st, const T* __restrict__ X, const T* __restrict__ W,
                                           long long t0, long long n0, int Tn, int N, int K, int tile, int steps,
                                           int lt) {
    if (tile < steps) {
        const int k0 = tile * BK;
#pragma unroll
        for (int h = 0; h < XV; h++) {
            int v = lt + LOADERS * h, r = v >> 3, c = v & 7;
            bool ok = t0 + r < Tn && k0 + 8 * c < K;
            cp_async16(st + swz(r, c), X + (ok ? (t0 + r) * K + k0 + 8 * c : 0), ok);
        }
#pragma unroll
        for (int h = 0; h < WV; h++) {
            int v = lt + LOADERS * h, r = v >> 3, c = v & 7;
            bool ok = n0 + r < N && k0 + 8 * c < K;
            cp_async16(st + X_BYTES + swz(r, c), W + (ok ? (n0 + r) * K + k0 + 8 * c : 0), ok);
        }
    }
    asm volatile("cp.async.commit_group;");
}

__device__ __forceinline__ void named_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(count) : "memory");
}
constexpr int FULL = 1, EMPTY = 1 + STAGES, EPI = 1 + 2 * STAGES;   // named barrier ids (KREG_WS)

// The four wgmmas of one k tile (stage at shared address st) for warpgroup wg, one commit group.
template <bool BF>
__device__ __forceinline__ void mma_stage(float* acc, unsigned st, int wg) {
    const unsigned xs = st + wg * 64 * 128, ws = st + X_BYTES;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) wgmma_tile<BF>(acc, sw128_desc(xs + 32 * kk), sw128_desc(ws + 32 * kk));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Without KREG_WS: all 256 threads copy and multiply. Step s: wait for tile s's copies, fence.proxy.async,
// barrier, copy tile s + STAGES - 2 into the stage wgmma(s - 2) read (retired by every warpgroup's
// wait_group 1 of step s - 1, before the barrier), issue tile s's wgmmas, wait until only they are pending.
template <bool BF, class T>
__device__ __forceinline__ void mainloop_shared(float* acc, unsigned sbase, const T* __restrict__ X, const T* __restrict__ W,
                                                long long t0, long long n0, int Tn, int N, int K, int steps) {
    const int wg = threadIdx.x >> 7;
#pragma unroll 1
    for (int s = 0; s < STAGES - 2; s++) load_stage(sbase + s * STAGE_BYTES, X, W, t0, n0, Tn, N, K, s, steps, threadIdx.x);
#pragma unroll 1
    for (int s = 0; s < steps; s++) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 3) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        load_stage(sbase + ((s + STAGES - 2) % STAGES) * STAGE_BYTES, X, W, t0, n0, Tn, N, K, s + STAGES - 2, steps,
                   threadIdx.x);
        mma_stage<BF>(acc, sbase + (s % STAGES) * STAGE_BYTES, wg);
#if KREG_WAIT0
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#else
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
#endif
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();                                         // every warpgroup is done with the stages
}

// KREG_WS: warpgroup 2 copies, warpgroups 0 and 1 multiply; per stage two named barriers of all 384
// threads. The producer copies tile i into stage i % STAGES once the consumers freed it (EMPTY, from
// tile i - STAGES on), and marks tile i - (STAGES - 2) FULL once its copies landed (wait_group, fence.proxy
// .async, bar.arrive). A consumer waits FULL for tile s, issues its wgmmas, and after wait_group 1 (tile
// s - 1's wgmmas retired) frees tile s - 1's stage (EMPTY) when the producer still needs it.
template <bool BF, class T>
__device__ __forceinline__ bool mainloop_ws(float* acc, unsigned sbase, const T* __restrict__ X, const T* __restrict__ W,
                                            long long t0, long long n0, int Tn, int N, int K, int steps) {
    constexpr int LAG = STAGES - 2;
    const int wg = threadIdx.x >> 7;
    if (wg == 2) {
        const int lt = threadIdx.x - CONSUMERS;
#pragma unroll 1
        for (int i = 0; i < steps; i++) {
            if (i >= STAGES) named_sync(EMPTY + i % STAGES, THREADS);
            load_stage(sbase + (i % STAGES) * STAGE_BYTES, X, W, t0, n0, Tn, N, K, i, steps, lt);
            if (i >= LAG) {
                asm volatile("cp.async.wait_group %0;" :: "n"(LAG) : "memory");
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                named_arrive(FULL + (i - LAG) % STAGES, THREADS);
            }
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#pragma unroll 1
        for (int j = steps > LAG ? steps - LAG : 0; j < steps; j++) named_arrive(FULL + j % STAGES, THREADS);
        return false;
    }
#pragma unroll 1
    for (int s = 0; s < steps; s++) {
        named_sync(FULL + s % STAGES, THREADS);
        mma_stage<BF>(acc, sbase + (s % STAGES) * STAGE_BYTES, wg);
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        if (s >= 1 && s - 1 + STAGES < steps) named_arrive(EMPTY + (s - 1) % STAGES, THREADS);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    named_sync(EPI, CONSUMERS);                              // both consumers are done with the stages
    return true;
}

template <class T>
__device__ __forceinline__ void gemm_wgmma(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                           int Tn, int N, int K) {
    constexpr bool BF = IsBf16<T>::value;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(smem_raw);
    const unsigned sbase = (sraw + 1023) & ~1023u;                  // the swizzle works on address bits 4-9
    T* smem = reinterpret_cast<T*>(smem_raw + (sbase - sraw));
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const long long t0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] = 0.f;
    const int steps = (K + BK - 1) / BK;
    if constexpr (KREG_WS) {
        if (!mainloop_ws<BF>(acc, sbase, X, W, t0, n0, Tn, N, K, steps)) return;    // the producer is done
    } else {
        mainloop_shared<BF>(acc, sbase, X, W, t0, n0, Tn, N, K, steps);
    }
    // accumulator 4 j + h2 of this thread: row 16 warp + lane / 4 (+ 8 if h2 >= 2), column 8 j + 2 (lane % 4) + h2 % 2
    unsigned* yw = reinterpret_cast<unsigned*>(smem);       // Y tile [BM][YLD] as words
    const int row = 64 * wg + 16 * warp + (lane >> 2), col = 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            yw[((row + 8 * h) * YLD + 8 * j + col) / 2] = kreg::Cvt<T>::pack(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    if constexpr (KREG_WS) named_sync(EPI, CONSUMERS); else __syncthreads();
#pragma unroll 1
    for (int e = threadIdx.x; e < BM * BN / 8; e += CONSUMERS) {
        int r = e / (BN / 8), c8 = 8 * (e % (BN / 8));
        long long t = t0 + r, n = n0 + c8;
        if (t >= Tn || n >= N) continue;
        uint4 v = *reinterpret_cast<const uint4*>(smem + r * YLD + c8);
        if (N % 8 == 0) {
            *reinterpret_cast<uint4*>(Y + t * N + n) = v;
        } else {
#pragma unroll 1
            for (int j = 0; j < 8 && n + j < N; j++) Y[t * N + n + j] = smem[r * YLD + c8 + j];
        }
    }
}

// KREG_PERSIST: block b takes tiles b, b + gridDim.x, ... (T tiles fastest); the producer's k steps run on
// one counter g across the block's tiles (stage g % STAGES, FULL / EMPTY as in mainloop_ws), so it fills
// the next tile's stages while the consumers store this tile's accumulators straight from registers
// (two elements a 32-bit store; one at a time when N is odd).
template <class T>
__device__ __forceinline__ void gemm_persistent(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                                int Tn, int N, int K) {
    constexpr bool BF = IsBf16<T>::value;
    constexpr int LAG = STAGES - 2;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(smem_raw);
    const unsigned sbase = (sraw + 1023) & ~1023u;
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int steps = (K + BK - 1) / BK, tiles_t = (Tn + BM - 1) / BM;
    const int tiles = tiles_t * ((N + BN - 1) / BN);
    const int mine = tiles > (int)blockIdx.x ? (tiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
    const long long total = (long long)mine * steps;                  // k steps of this block
    if (wg == 2) {
        const int lt = threadIdx.x - CONSUMERS;
        long long g = 0;
#pragma unroll 1
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const long long t0 = (long long)(tile % tiles_t) * BM, n0 = (long long)(tile / tiles_t) * BN;
#pragma unroll 1
            for (int i = 0; i < steps; i++, g++) {
                if (g >= STAGES) named_sync(EMPTY + (int)(g % STAGES), THREADS);
                load_stage(sbase + (int)(g % STAGES) * STAGE_BYTES, X, W, t0, n0, Tn, N, K, i, steps, lt);
                if (g >= LAG) {
                    asm volatile("cp.async.wait_group %0;" :: "n"(LAG) : "memory");
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    named_arrive(FULL + (int)((g - LAG) % STAGES), THREADS);
                }
            }
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#pragma unroll 1
        for (long long j = total > LAG ? total - LAG : 0; j < total; j++) named_arrive(FULL + (int)(j % STAGES), THREADS);
        return;
    }
    float acc[NACC];
    long long g = 0;
#pragma unroll 1
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const long long t0 = (long long)(tile % tiles_t) * BM, n0 = (long long)(tile / tiles_t) * BN;
#pragma unroll
        for (int i = 0; i < NACC; i++) acc[i] = 0.f;
#pragma unroll 1
        for (int i = 0; i < steps; i++, g++) {
            named_sync(FULL + (int)(g % STAGES), THREADS);
            mma_stage<BF>(acc, sbase + (int)(g % STAGES) * STAGE_BYTES, wg);
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            if (i >= 1 && g - 1 + STAGES < total) named_arrive(EMPTY + (int)((g - 1) % STAGES), THREADS);
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (g - 1 + STAGES < total) named_arrive(EMPTY + (int)((g - 1) % STAGES), THREADS);   // the tile's last step
        const long long row = t0 + 64 * wg + 16 * warp + (lane >> 2);
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
            const long long col = n0 + 8 * j + 2 * (lane & 3);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const long long r = row + 8 * h;
                if (r >= Tn || col >= N) continue;
                if (N % 2 == 0) {
                    *reinterpret_cast<unsigned*>(Y + r * N + col) = kreg::Cvt<T>::pack(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                } else {
                    Y[r * N + col] = kreg::Cvt<T>::from(acc[4 * j + 2 * h]);
                    if (col + 1 < N) Y[r * N + col + 1] = kreg::Cvt<T>::from(acc[4 * j + 2 * h + 1]);
                }
            }
        }
    }
}

template <class T>
__device__ __forceinline__ void gemm_entry(const T* __restrict__ X, const T* __restrict__ W, T* __restrict__ Y,
                                           int Tn, int N, int K) {
    if constexpr (KREG_PERSIST) gemm_persistent(X, W, Y, Tn, N, K); else gemm_wgmma(X, W, Y, Tn, N, K);
}

extern "C" __global__ void __launch_bounds__(THREADS, KREG_MINB) gemm_wgmma_bf16(const __nv_bfloat16* __restrict__ X,
        const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, int T, int N, int K) {
    gemm_entry(X, W, Y, T, N, K);
}

extern "C" __global__ void __launch_bounds__(THREADS, KREG_MINB) gemm_wgmma_f16(const __half* __restrict__ X,
        const __half* __restrict__ W, __half* __restrict__ Y, int T, int N, int K) {
    gemm_entry(X, W, Y, T, N, K);
}

// Layout probe (one block of 128 threads): A [64][K] and B [64][K] (K a multiple of 64, at most 256)
// copied into shared memory in the 128-byte swizzle layout by plain stores, K / 16 wgmma m64n64k16, then
// the raw accumulators: D[thread][register] (32 a thread).
template <class T>
__device__ __forceinline__ void wgmma_probe(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ D, int K) {
    extern __shared__ __align__(1024) unsigned char probe_smem[];
    const unsigned sraw = (unsigned)__cvta_generic_to_shared(probe_smem);
    const unsigned sbase = (sraw + 1023) & ~1023u;
    unsigned char* s = probe_smem + (sbase - sraw);
    const int tiles = K / 64;                                // tile q: A [64][64] at 16 KB q, B after it
    for (int v = threadIdx.x; v < tiles * 64 * 8; v += 128) {
        int q = v / 512, r = (v / 8) % 64, c = v % 8;
        *reinterpret_cast<uint4*>(s + 16384 * q + swz(r, c)) = *reinterpret_cast<const uint4*>(A + r * K + 64 * q + 8 * c);
        *reinterpret_cast<uint4*>(s + 16384 * q + 8192 + swz(r, c)) = *reinterpret_cast<const uint4*>(B + r * K + 64 * q + 8 * c);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    float d[32];
#pragma unroll
    for (int i = 0; i < 32; i++) d[i] = 0.f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int q = 0; q < tiles; q++)
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            wgmma_n64<IsBf16<T>::value>(d, sw128_desc(sbase + 16384 * q + 32 * kk), sw128_desc(sbase + 16384 * q + 8192 + 32 * kk));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < 32; i++) D[threadIdx.x * 32 + i] = d[i];
}

extern "C" __global__ void __launch_bounds__(128, 1) wgmma_probe_bf16(const __nv_bfloat16* __restrict__ A,
        const __nv_bfloat16* __restrict__ B, float* __restrict__ D, int K) {
    wgmma_probe(A, B, D, K);
}

extern "C" __global__ void __launch_bounds__(128, 1) wgmma_probe_f16(const __half* __restrict__ A,
        const __half* __restrict__ B, float* __restrict__ D, int K) {
    wgmma_probe(A, B, D, K);
}
