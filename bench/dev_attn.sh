#!/usr/bin/env bash
# Device run of helper "attn" (OUT=dir timeout 240 bash bench/dev_attn.sh), three files:
#   $OUT/attn_fused.txt   bench/attention_decode_fused_gpu.py: the unsafe fused decode (split + ticket + merge in
#                         one launch; -DKREG_PREF=0/1/2/8 L2 hints before the PDL wait, -DKREG_MU=9) next to the
#                         registered safe pair, at n = 640 of a 4096 cache, 8192 and 32768, P = choose_splits and
#                         half / twice it, plain graph and PDL graph timings, max|out - SDPA| (bf16; f16 once);
#                         then (ATTN_CLUSTER=1, its own process) the cluster-merge candidates (P = cluster size 8 / 16)
#   $OUT/attn_verify.txt  kreg verify --device gpu (no prover) of the new op attention_decode_fused: numerics of
#                         every named case, conformance speed of the largest (safe: the pair as two launches,
#                         P = 33; unsafe: one launch, cluster of 8), summarised by bench/verify_summary.py
#   $OUT/attn.err         exit codes, times, stderr tails
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
run 80 fused python3 bench/attention_decode_fused_gpu.py /tmp/attn_fused_out.txt
ATTN_CLUSTER=1 run 60 cluster python3 bench/attention_decode_fused_gpu.py /tmp/attn_cluster_out.txt
cat /tmp/attn_fused.txt /tmp/attn_cluster.txt > "$OUT/attn_fused.txt" 2>> "$E"
run 70 verify kreg verify --device gpu --no-prove --json --speed-cases largest attention_decode_fused_bf16_safe \
    attention_decode_fused_bf16_cluster attention_decode_fused_f16_safe attention_decode_fused_f16_cluster
[ -s /tmp/attn_verify.txt ] && python3 bench/verify_summary.py /tmp/attn_verify.txt > "$OUT/attn_verify.txt" 2>> "$E"
cat "$E"
