#!/usr/bin/env bash
# The prefill helper's device run (OUT=dir timeout 180 bash bench/dev_prefill.sh), three files:
#   $OUT/prefill_verify.txt    kreg verify --device gpu --no-prove --no-speed of the registered tensor-core prefills
#                              (safe attention_prefill_tc_*_safe, unsafe attention_prefill_tc_lf_*) at every named case
#                              up to 50 MB of buffers (T <= 2048 but the 32B heads: the T = 8192 float64 references are too slow here),
#                              summarised by bench/verify_summary.py
#   $OUT/prefill_registry.txt  bench/attention_prefill_gpu.py: every registered variant beside SDPA flash, bf16 and f16
#   $OUT/prefill_dev.txt       exit codes, times, stderr tails
# (The candidate sweeps of runs 1 - 3: `python3 bench/prefill_dev.py speed OUT [NAME ...]`, in
# bench/results/attention_prefill_tc_candidates.txt.)
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/prefill_dev.txt"; : > "$E"
t0=$(date +%s)
timeout 110 kreg verify --device gpu --no-prove --no-speed --json --max-case-mb 50 attention_prefill_tc_bf16_safe \
    attention_prefill_tc_f16_safe attention_prefill_tc_lf_bf16 attention_prefill_tc_lf_f16 > /tmp/prefill_verify.json 2>> "$E"
echo "== verify exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
[ -s /tmp/prefill_verify.json ] && python3 bench/verify_summary.py /tmp/prefill_verify.json > "$OUT/prefill_verify.txt" 2>> "$E"
t0=$(date +%s)
for dt in bf16 f16; do
    timeout 25 python3 bench/attention_prefill_gpu.py /tmp/prefill_registry_$dt.txt $dt >> "$OUT/prefill_registry.txt" 2>> "$E"
done
echo "== registry tables exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
cat "$OUT/prefill_verify.txt" "$OUT/prefill_registry.txt" "$E"
