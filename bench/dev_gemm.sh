#!/usr/bin/env bash
# The gemm helper's third mid-session device run (<= 240 s): the third sweep (bench/gemm_dev.py, TCA_CONFIGS
# and SW3_CONFIGS): gemm_tc with cp.async into two stages (KREG_ASYNC=1, the safe candidate) and
# gemm_mma_sw with other warp tiles / blocks per SM (128 x 160 and 128 x 192 tiles for the N = 2560
# shapes), numerics at the small cases and the 4B o projection, then speed on the 4B layer at T = 2048.
# Files: $OUT/gemm_dev.txt (numerics, exit codes), $OUT/gemm_speed.txt.
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_gemm.sh
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
t0=$(date +%s)
timeout 75 python3 bench/gemm_dev.py numerics 3 > "$OUT/gemm_dev.txt" 2>&1
echo "numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 130 python3 bench/gemm_dev.py speed 3 > "$OUT/gemm_speed.txt" 2>> "$OUT/gemm_dev.txt"
echo "speed exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
cat "$OUT/gemm_dev.txt" "$OUT/gemm_speed.txt"
