#!/usr/bin/env bash
# Device run of helper "decode" (OUT=dir timeout 180 bash bench/dev_decode.sh), three files:
#   $OUT/decode_table.txt   bench/attention_decode_gpu.py: the table (every safe bf16 decode with the safe
#                           merge, the unsafe pair, SDPA, copy; n = 8192 and 32768, P swept around choose_splits,
#                           plain graph and PDL), then bench/attention_decode_dev.py's lines (the registered rs_nm
#                           pair, the previous default, the loads-only floor, stream floors; n = 640 of 4096 too)
#   $OUT/decode_verify.txt  kreg verify --device gpu --no-prove --no-speed of the new / changed variants
#                           (numerics of every named case), summarised by bench/verify_summary.py
#   $OUT/decode.err         exit codes, times, stderr tails, and bench/gemv_dev.py's table (gemv_residual knobs
#                           on the o / down projections, conformance timing)
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/decode.err"; : > "$E"
run() {   # run LIMIT NAME CMD...: stdout to /tmp/decode_NAME.txt, stderr's tail and the exit code into $E
    local limit=$1 name=$2; shift 2
    local t0=$(date +%s)
    timeout "$limit" "$@" > "/tmp/decode_$name.txt" 2> "/tmp/decode_$name.err"
    echo "== $name exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
    tail -8 "/tmp/decode_$name.err" >> "$E"
}
run 60 table python3 bench/attention_decode_gpu.py "$OUT/decode_table.txt"
[ -s "$OUT/decode_table.txt" ] || cp /tmp/decode_table.txt "$OUT/decode_table.txt"   # (cut short: what it printed)
run 40 dev python3 bench/attention_decode_dev.py /tmp/decode_dev_out.txt
[ -s /tmp/decode_dev_out.txt ] && cat /tmp/decode_dev_out.txt >> "$OUT/decode_table.txt"
run 35 verify kreg verify --device gpu --no-prove --no-speed --json attention_decode_bf16_rs_nm attention_decode_f16_rs_nm \
    attention_merge_bf16_safe attention_merge_f16_safe
[ -s /tmp/decode_verify.txt ] && python3 bench/verify_summary.py /tmp/decode_verify.txt > "$OUT/decode_verify.txt" 2>> "$E"
run 20 gemv python3 bench/gemv_dev.py
cat /tmp/decode_gemv.txt >> "$E"
cat "$E"
