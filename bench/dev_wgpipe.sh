#!/usr/bin/env bash
# The wgpipe helper's device run (<= 180 s), issue #12: which pipeline structure is the lever for a wgmma GEMM,
# and the safe gemm_wgs with wgmma.wait_group 1 every step (bench/wgs_pipe.py).
# 1. speed on the Qwen3-4B layer at T = 2048 (bf16) against cuBLAS: registered safe / unsafe, the unsafe
#    gemm_wgmma with wait_group 0 or fewer stages, the safe KREG_PIPE (cp.async) / KREG_RS configurations;
# 2. GPU numerics of the candidates.
# Files: $OUT/wgpipe_speed.txt, $OUT/wgpipe_numerics.txt (with exit codes).
# Usage (device, carry .whl): OUT=dir timeout 180 bash bench/dev_wgpipe.sh
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
t0=$(date +%s)
timeout 90 python3 bench/wgs_pipe.py speed > "$OUT/wgpipe_speed.txt" 2>&1
echo "speed exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/wgpipe_speed.txt"
t0=$(date +%s)
timeout 60 python3 bench/wgs_pipe.py numerics gpu > "$OUT/wgpipe_numerics.txt" 2>&1
echo "numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/wgpipe_numerics.txt"
cat "$OUT/wgpipe_speed.txt" "$OUT/wgpipe_numerics.txt"
