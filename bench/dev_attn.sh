#!/usr/bin/env bash
# Mid-session device run of helper "attn": the flash-decoding sweep (bench/attention_decode_sweep.py:
# decode candidates x split count P at n = 640 .. 32768 on the Qwen3-4B heads, merges alone, SDPA, copy).
# Usage (device): OUT=dir timeout 240 bash bench/dev_attn.sh   -> $OUT/attn_sweep.txt, $OUT/attn_sweep.err
set -u
. bench/device_env.sh
t0=$(date +%s)
timeout 215 python3 bench/attention_decode_sweep.py "$OUT/attn_sweep.txt" > /dev/null 2> "$OUT/attn_sweep.err"
echo "sweep exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/attn_sweep.err"
tail -5 "$OUT/attn_sweep.err"
