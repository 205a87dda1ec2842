#!/usr/bin/env bash
# Mid-session device run of helper "attn" (OUT=dir timeout 240 bash bench/dev_attn.sh), three files:
#   $OUT/attn_sweep.txt    bench/attention_decode_sweep.py: decode candidates x split count P at
#                          n = 8192, 640, 32768, 2048 on the Qwen3-4B heads, merges alone, SDPA, copy
#   $OUT/attn_prefill.txt  bench/attention_prefill_check.py (the mma prefill's numerics at full size vs
#                          torch fp32) and bench/attention_prefill_gpu.py (every bf16 prefill variant vs SDPA)
#   $OUT/attn.err          exit codes, times and stderr tails of the three
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/attn.err"; : > "$E"
run() {   # run LIMIT NAME CMD...: stdout to /tmp/attn_NAME.txt, stderr's tail and the exit code into $E
    local limit=$1 name=$2; shift 2
    local t0=$(date +%s)
    timeout "$limit" "$@" > "/tmp/attn_$name.txt" 2> "/tmp/attn_$name.err"
    echo "== $name exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
    tail -15 "/tmp/attn_$name.err" >> "$E"
}
run 100 sweep python3 bench/attention_decode_sweep.py "$OUT/attn_sweep.txt"
run 25 check python3 bench/attention_prefill_check.py /tmp/attn_check_out.txt bf16 mma
run 70 bench python3 bench/attention_prefill_gpu.py /tmp/attn_bench_out.txt bf16
cat /tmp/attn_check.txt /tmp/attn_bench.txt > "$OUT/attn_prefill.txt" 2>> "$E"
cat "$E"
