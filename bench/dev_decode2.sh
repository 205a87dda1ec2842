#!/usr/bin/env bash
# Device run of helper "decode2" (OUT=dir timeout 180 bash bench/dev_decode2.sh), two files:
#   $OUT/decode2_table.txt   bench/attention_decode_dev2.py: loads-only floors of the decode structures (the rs
#                            register pipeline, the cp.async ring of attention_decode_cp.cu at 4 / 6 stages,
#                            contiguous chunks, one fat block an SM at P = 16) and the candidates with their
#                            arithmetic, beside the registered rs_nm pair and SDPA; n = 8192, 32768 (640 of 4096)
#   (run 1 also ran kreg verify --device gpu --no-prove --no-speed on the cp variants: numerics pass at every
#    named case, bench/results/attention_decode_dev2_run1.txt; not repeated)
#   $OUT/decode2.err         exit codes, times, stderr tails
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/decode2.err"; : > "$E"
run() {   # run LIMIT NAME CMD...: stdout to /tmp/decode2_NAME.txt, stderr's tail and the exit code into $E
    local limit=$1 name=$2; shift 2
    local t0=$(date +%s)
    timeout "$limit" "$@" > "/tmp/decode2_$name.txt" 2> "/tmp/decode2_$name.err"
    echo "== $name exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
    tail -8 "/tmp/decode2_$name.err" >> "$E"
}
run 120 dev python3 bench/attention_decode_dev2.py "$OUT/decode2_table.txt"
[ -s "$OUT/decode2_table.txt" ] || cp /tmp/decode2_dev.txt "$OUT/decode2_table.txt"   # (cut short: what it printed)
cat "$E"
