#!/usr/bin/env bash
# The gemm helper's fourth mid-session device run (<= 240 s): the Hopper wgmma GEMM (bench/wgmma_dev.py).
# 1. the layout probe (wgmma_probe_bf16: descriptors, 128-byte swizzle, accumulator fragment layout) on
#    designed inputs, mismatch maps if any; raw fp32 accumulators of a random case for the emulator's
#    bit-exact test ($OUT/wgmma_probe.txt);
# 2. gemm_wgmma numerics in a few (BN, STAGES; plain, producer warpgroup, persistent) configurations: exact random-integer tiles with mismatch
#    maps, then the conformance numerics at the ragged cases, 4B qkv at T = 17 and 4B o;
# 3. speed on the Qwen3-4B layer at T = 2048 against cuBLAS and gemm_mma_sw160.
# Files: $OUT/gemm_dev.txt (probe + numerics, exit codes), $OUT/wgmma_probe.txt, $OUT/gemm_speed.txt.
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_gemm.sh
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
t0=$(date +%s)
timeout 30 python3 bench/wgmma_dev.py probe "$OUT/wgmma_probe.txt" > "$OUT/gemm_dev.txt" 2>&1
echo "probe exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 75 python3 bench/wgmma_dev.py numerics >> "$OUT/gemm_dev.txt" 2>&1
echo "numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 115 python3 bench/wgmma_dev.py speed > "$OUT/gemm_speed.txt" 2>> "$OUT/gemm_dev.txt"
echo "speed exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
cat "$OUT/gemm_dev.txt" "$OUT/gemm_speed.txt"
