#!/usr/bin/env bash
# The gemm helper's second mid-session device run (<= 240 s): numerics of the re-registered gemm_tc (BK 64)
# and gemm_mma_sw (128 x 128) at small cases, the official bf16 table (bench/gemm_gpu.py: every registered
# variant but gemm_mma, 4B shapes, cuBLAS through torch), and a second tile / stage sweep.
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_gemm.sh
set -u
. bench/device_env.sh
t0=$(date +%s)
timeout 40 python3 bench/gemm_dev.py numerics registered > "$OUT/gemm_dev.txt" 2>&1
echo "numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 110 python3 bench/gemm_gpu.py "$OUT/gemm_gpu.txt" bf16 gemm_mma_bf16 > /dev/null 2>> "$OUT/gemm_dev.txt"
echo "gemm_gpu exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
t0=$(date +%s)
timeout 70 python3 bench/gemm_dev.py speed 2 >> "$OUT/gemm_dev.txt" 2>&1
echo "speed exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemm_dev.txt"
cat "$OUT/gemm_dev.txt" "$OUT/gemm_gpu.txt"
