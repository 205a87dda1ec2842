#!/usr/bin/env bash
# The prefill helper's device run (OUT=dir timeout 180 bash bench/dev_prefill.sh), three files:
#   $OUT/prefill_speed.txt  bench/prefill_dev.py speed: the attention_prefill_tc candidates (-D builds: row order,
#                           8 warps, mask only on diagonal tiles, rescale only on a new max, two K/V buffers: one barrier a tile) beside torch SDPA flash, Qwen3-4B heads, T = 2048 and 8192
#   $OUT/prefill_registry.txt  bench/attention_prefill_gpu.py: every registered bf16 variant beside SDPA (the ratios)
#   $OUT/prefill_dev.txt    GPU numerics of the main candidates (small named cases, 4B T = 2048, the 4B chunk),
#                           bf16 and f16; exit codes and times
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/prefill_dev.txt"; : > "$E"
t0=$(date +%s)
timeout 60 python3 bench/prefill_dev.py speed "$OUT/prefill_speed.txt" registered lf_diag_skip db_diag_skip lf_db_diag_skip \
    db2_diag_skip w8_db_diag_skip w8_lf_db_diag_skip > /dev/null 2>> "$E"
echo "== speed exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
t0=$(date +%s)
timeout 45 python3 bench/attention_prefill_gpu.py /tmp/prefill_registry.txt bf16 > "$OUT/prefill_registry.txt" 2>> "$E"
echo "== registry table exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
t0=$(date +%s)
timeout 35 python3 bench/prefill_dev.py numerics gpu db_diag_skip db2_diag_skip >> "$E" 2>&1
echo "== numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
cat "$OUT/prefill_speed.txt" "$OUT/prefill_registry.txt" "$E"
