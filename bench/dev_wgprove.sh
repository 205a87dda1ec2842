#!/usr/bin/env bash
# The wgprove helper's device run (<= 180 s): the safe wgmma GEMM (kernels/safe/gemm/gemm_wgmma_safe.cu).
# 1. numerics of the registered bf16 / f16 variants and the cp.async (KREG_ASYNC) configurations at the
#    ragged cases, 4B qkv at T = 17, 4B o and 8B down (bench/wgs_dev.py numerics);
# 2. speed of each configuration and the unsafe gemm_wgmma against cuBLAS on the Qwen3-4B layer at T = 2048.
# Files: $OUT/wgs_dev.txt (numerics, exit codes), $OUT/wgs_speed.txt.
# Usage (device, carry .whl): OUT=dir timeout 180 bash bench/dev_wgprove.sh
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
t0=$(date +%s)
timeout 70 python3 bench/wgs_dev.py numerics > "$OUT/wgs_dev.txt" 2>&1
echo "numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/wgs_dev.txt"
t0=$(date +%s)
timeout 85 python3 bench/wgs_dev.py speed > "$OUT/wgs_speed.txt" 2>> "$OUT/wgs_dev.txt"
echo "speed exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/wgs_dev.txt"
cat "$OUT/wgs_dev.txt" "$OUT/wgs_speed.txt"
