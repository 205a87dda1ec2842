#!/usr/bin/env bash
# Device run of helper "prover" (OUT=dir timeout 240 bash bench/dev_prover.sh), two files:
#   $OUT/prover_order.txt  bench/prefill_order_gpu.py: attention_prefill_tc_bf16_safe as registered (row tile =
#                          blockIdx.x: the order whose output write/write pairs the prover closes) and built with
#                          -DKREG_LONGEST_FIRST=1 (the longest rows first, as first timed), beside SDPA flash, 4 shapes
#   $OUT/prover.err        exit codes, stderr tails, and `kreg verify --device gpu` numerics of every named case of
#                          attention_prefill_tc_bf16_safe / _f16_safe
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/prover.err"; : > "$E"
run() {   # run LIMIT NAME CMD...
    local limit=$1 name=$2; shift 2
    local t0=$(date +%s)
    timeout "$limit" "$@" > "/tmp/prover_$name.txt" 2> "/tmp/prover_$name.err"
    echo "== $name exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
    tail -8 "/tmp/prover_$name.err" >> "$E"
}
run 100 order python3 bench/prefill_order_gpu.py "$OUT/prover_order.txt" attention_prefill_tc_bf16_safe -DKREG_LONGEST_FIRST=1
run 100 verify kreg verify --device gpu --no-prove --no-speed --json attention_prefill_tc_bf16_safe attention_prefill_tc_f16_safe
[ -s /tmp/prover_verify.txt ] && python3 bench/verify_summary.py /tmp/prover_verify.txt >> "$E" 2>&1
cat "$E"
