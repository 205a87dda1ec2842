#!/usr/bin/env bash
# Flash-decoding on the device: bench/attention_decode_gpu.py (safe and unsafe decode+merge on the Qwen3-4B
# heads at 8192 and 32768 positions vs torch SDPA and the copy bandwidth, one process) and
# `kreg verify --device gpu --op attention_decode --op attention_merge` (proofs, numerics at every case,
# speed). Usage (device, carry .whl): OUT=dir bash bench/attention_gpu.sh
set -u
. bench/device_env.sh
t0=$(date +%s)
timeout 240 python3 bench/attention_decode_gpu.py "$OUT/attention_decode_gpu.txt" > /dev/null 2> "$OUT/attention_decode_gpu.err"
echo "attention_decode_gpu exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/attention_decode_gpu.err"
t0=$(date +%s)
timeout 300 kreg verify --device gpu --op attention_decode --op attention_merge --json > "$OUT/verify_gpu_attention.json" \
    2> "$OUT/verify_gpu_attention.err"
echo "verify exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/verify_gpu_attention.err"
python3 bench/verify_summary.py "$OUT/verify_gpu_attention.json" > "$OUT/verify_gpu_attention.txt" 2>&1
cat "$OUT/attention_decode_gpu.txt"; tail -3 "$OUT/attention_decode_gpu.err"; tail -8 "$OUT/verify_gpu_attention.err"
tail -12 "$OUT/verify_gpu_attention.txt"
