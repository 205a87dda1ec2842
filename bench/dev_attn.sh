#!/usr/bin/env bash
# Device run of helper "attn" (OUT=dir timeout 240 bash bench/dev_attn.sh), three files:
#   $OUT/attn_decode.txt  bench/attention_decode_pdl.py: decode+merge candidates (chunked vs cyclic splits,
#                         speculative first loads on/off, safe / fast merge) at n = 640 of a 4096 cache,
#                         8192 and 32768, as plain graph nodes and with PDL (as the engine's step), decode and
#                         merge alone; then bench/attention_decode_gpu.py (the registered pairs, the table)
#   $OUT/attn_prefill.txt bench/attention_prefill_gpu.py bf16 (every registered variant, the new safe tensor-core
#                         attention_prefill_tc included, vs SDPA flash)
#   $OUT/attn.err         exit codes, times, stderr tails, and `kreg verify --device gpu` (numerics of every
#                         named case of the safe decode (cyclic splits) and merge variants and attention_prefill_tc_bf16) summarised
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
run 90 pdl python3 bench/attention_decode_pdl.py /tmp/attn_pdl_out.txt
run 30 dec python3 bench/attention_decode_gpu.py /tmp/attn_dec_out.txt
cat /tmp/attn_pdl.txt /tmp/attn_dec.txt > "$OUT/attn_decode.txt" 2>> "$E"
run 35 pf python3 bench/attention_prefill_gpu.py /tmp/attn_pf_out.txt bf16
cat /tmp/attn_pf.txt > "$OUT/attn_prefill.txt" 2>> "$E"
run 60 verify kreg verify --device gpu --no-prove --no-speed --json attention_decode_bf16_safe attention_decode_f16_safe \
    attention_merge_bf16_safe attention_merge_f16_safe attention_prefill_tc_bf16
[ -s /tmp/attn_verify.txt ] && python3 bench/verify_summary.py /tmp/attn_verify.txt >> "$E" 2>&1
cat "$E"
