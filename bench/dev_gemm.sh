#!/usr/bin/env bash
# The gemm helper's device run (<= 240 s): the Hopper wgmma GEMM (bench/wgmma_dev.py).
# 0. the emulator's fitted wgmma accumulation against the H100's bits on fresh inputs (bf16, f16);
# 1. gemm_wgmma numerics in a few (BN, STAGES; plain or persistent) configurations: exact random-integer
#    tiles with mismatch maps, then the conformance numerics at the ragged cases, 4B qkv at T = 17 (and
#    4B o for the main ones, in both dtypes);
# 2. the table: bench/gemm_gpu.py (every registered gemm variant against cuBLAS, 4B layer at
#    T = 2048, best safe / unsafe per shape);
# 3. the configuration sweep's speed on the Qwen3-4B layer at T = 2048.
# (Run 1 of the layout probe, `python3 bench/wgmma_dev.py probe OUT`, is in bench/results.)
# Files: $OUT/gemm_dev.txt (numerics, exit codes), $OUT/gemm_gpu.txt, $OUT/gemm_speed.txt.
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_gemm.sh
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
t0=$(date +%s)
timeout 25 python3 bench/wgmma_dev.py fitcheck > "$OUT/gemm_dev.txt" 2>&1
echo "fitcheck exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 50 python3 bench/wgmma_dev.py numerics >> "$OUT/gemm_dev.txt" 2>&1
echo "numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 60 python3 bench/gemm_gpu.py "$OUT/gemm_gpu.txt" bf16 > /dev/null 2>> "$OUT/gemm_dev.txt"
echo "gemm_gpu exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 80 python3 bench/wgmma_dev.py speed > "$OUT/gemm_speed.txt" 2>> "$OUT/gemm_dev.txt"
echo "speed exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
cat "$OUT/gemm_dev.txt" "$OUT/gemm_gpu.txt" "$OUT/gemm_speed.txt"
