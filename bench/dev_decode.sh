#!/usr/bin/env bash
# Device run of helper "decode" (OUT=dir timeout 180 bash bench/dev_decode.sh), three files:
#   $OUT/decode_dev.txt     bench/attention_decode_dev.py: the decode + merge candidates (old safe decode, the
#                           rs decode: half-warp reduce-scatter + peeled last iteration; KREG_UL=8: 8 positions a
#                           half-warp an iteration under a 224-register cap, KREG_LAZY=1 rescale skipped when no
#                           max moved, KREG_PREF=1/2 L2 hints before the PDL wait; the merge with 8 or 4 warps)
#                           at n = 8192 and 32768, plain graph and PDL, beside SDPA, copy, the loads-only floor
#                           and a contiguous stream read of the same bytes (one launch)
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
run 90 dev python3 bench/attention_decode_dev.py "$OUT/decode_dev.txt"
run 45 verify kreg verify --device gpu --no-prove --no-speed --json attention_decode_bf16_rs_pf attention_decode_bf16_rs_nm attention_decode_f16_rs_nm \
    attention_merge_bf16_safe attention_merge_f16_safe
[ -s /tmp/decode_verify.txt ] && python3 bench/verify_summary.py /tmp/decode_verify.txt > "$OUT/decode_verify.txt" 2>> "$E"
run 25 gemv python3 bench/gemv_dev.py
cat /tmp/decode_gemv.txt >> "$E"
cat "$E"
