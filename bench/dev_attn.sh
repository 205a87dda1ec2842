#!/usr/bin/env bash
# Device run of helper "attn" (OUT=dir timeout 240 bash bench/dev_attn.sh), three files:
#   $OUT/attn_decode.txt   bench/attention_decode_gpu.py (the registered safe / unsafe decode+merge at
#                          choose_splits' P and around it, Qwen3-4B heads, 8192 / 32768 vs SDPA and copy),
#                          then bench/attention_decode_sweep.py at Qwen3-32B (Hq 64) and 0.6B (Hq 16) heads
#   $OUT/attn_prefill.txt  the mma prefill's full-size numerics (bf16, f16) and the f16 prefill bench
#   $OUT/attn.err          exit codes, times, stderr tails, and `kreg verify --device gpu` (numerics of every
#                          named case of attention_decode / attention_merge, no speed) summarised
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/attn.err"; : > "$E"
run() {   # run LIMIT NAME CMD...: stdout to /tmp/attn_NAME.txt, stderr's tail and the exit code into $E
    local limit=$1 name=$2; shift 2
    local t0=$(date +%s)
    timeout "$limit" "$@" > "/tmp/attn_$name.txt" 2> "/tmp/attn_$name.err"
    echo "== $name exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
    tail -8 "/tmp/attn_$name.err" >> "$E"
}
run 30 dec python3 bench/attention_decode_gpu.py /tmp/attn_dec_out.txt
run 30 s64 env ATTN_HQ=64 ATTN_LENGTHS=8192,640,32768 python3 bench/attention_decode_sweep.py /tmp/attn_s64_out.txt
run 20 s16 env ATTN_HQ=16 ATTN_LENGTHS=8192,640 python3 bench/attention_decode_sweep.py /tmp/attn_s16_out.txt
cat /tmp/attn_dec.txt /tmp/attn_s64.txt /tmp/attn_s16.txt > "$OUT/attn_decode.txt" 2>> "$E"
run 15 ck16 python3 bench/attention_prefill_check.py /tmp/attn_ck16_out.txt f16 mma
run 15 ck16b python3 bench/attention_prefill_check.py /tmp/attn_ckbf_out.txt bf16 mma
run 35 pf16 python3 bench/attention_prefill_gpu.py /tmp/attn_pf16_out.txt f16
cat /tmp/attn_ck16.txt /tmp/attn_ck16b.txt /tmp/attn_pf16.txt > "$OUT/attn_prefill.txt" 2>> "$E"
run 55 verify kreg verify --device gpu --no-prove --no-speed --json attention_decode_bf16_safe attention_decode_f16_safe \
    attention_merge_bf16_safe attention_merge_f16_safe
python3 bench/verify_summary.py /tmp/attn_verify.txt >> "$E" 2>&1
cat "$E"
