#!/usr/bin/env bash
# The gemm helper's mid-session device run (<= 240 s): numerics of the tensor-core variants and of cuBLAS
# under the op's accumulation tolerance (ragged cases, 4B o, K = 12288), then the 4B layer's speed at
# T = 2048 for cuBLAS, the safe gemm_tc (five configurations) and the unsafe gemm_mma_sw (three).
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_gemm.sh
set -u
. bench/device_env.sh
t0=$(date +%s)
timeout 80 python3 bench/gemm_dev.py numerics > "$OUT/gemm_numerics.txt" 2>&1
echo "numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_numerics.txt"
t0=$(date +%s)
timeout 120 python3 bench/gemm_dev.py speed > "$OUT/gemm_speed.txt" 2>&1
echo "speed exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_speed.txt"
cat "$OUT/gemm_numerics.txt" "$OUT/gemm_speed.txt"
