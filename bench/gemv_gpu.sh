#!/usr/bin/env bash
# GEMV on the device: `kreg verify --device gpu --op gemv` (proofs, numerics at every case, speed) and
# bench/gemv_vs_cublas.py (ours vs cuBLAS through torch, copy bandwidth, one process).
# Usage (device, carry .whl): OUT=dir bash bench/gemv_gpu.sh
set -u
. bench/device_env.sh
t0=$(date +%s)
timeout 200 python3 bench/gemv_vs_cublas.py > "$OUT/gemv_vs_cublas.txt" 2> "$OUT/gemv_vs_cublas.err"
echo "gemv_vs_cublas exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/gemv_vs_cublas.err"
t0=$(date +%s)
timeout 240 kreg verify --device gpu --op gemv --json > "$OUT/verify_gpu_gemv.json" 2> "$OUT/verify_gpu_gemv.err"
echo "verify exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/verify_gpu_gemv.err"
python3 bench/verify_summary.py "$OUT/verify_gpu_gemv.json" > "$OUT/verify_gpu_gemv.txt" 2>&1
cat "$OUT/gemv_vs_cublas.txt"; tail -3 "$OUT/gemv_vs_cublas.err"; tail -8 "$OUT/verify_gpu_gemv.err"; tail -12 "$OUT/verify_gpu_gemv.txt"
