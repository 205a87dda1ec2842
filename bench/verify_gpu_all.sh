#!/usr/bin/env bash
# The whole registry on the GPU in one device run, op by op (each with its own time limit, the run
# with an overall one): the gpu-marked tests of the broken variants (the anti-cheat checks on this GPU),
# then `kreg verify --device gpu --json $VERIFY_FLAGS` per op (numerics at every named and seeded case, speed
# of every named case); wall time per op in verify_gpu_all.log, every op's JSON in verify_gpu_all.jsonl.
# Usage (device): OUT=dir [VERIFY_FLAGS=...] bash bench/verify_gpu_all.sh SECONDS_PER_OP SECONDS_IN_ALL OP [OP ...]
# VERIFY_FLAGS defaults to --no-prove (the device image has no z3 unless its wheel is carried).
# (bench/results/verify_gpu_ops.* came from its predecessor: VERIFY_FLAGS="--no-prove --speed-cases largest".)
set -u
OUT=${OUT:-bench/results}
VERIFY_FLAGS=${VERIFY_FLAGS---no-prove}
per_op=$1; total=$2; shift 2
mkdir -p "$OUT"
export KREG_HOME=$(mktemp -d) PYTHONUNBUFFERED=1
t0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"; nproc; } > "$OUT/verify_gpu_all.log"
if [ -z "${SKIP_BROKEN:-}" ]; then
    timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_broken_variants.py 2>&1 | tail -15 > "$OUT/verify_gpu_all_broken.txt"
    echo "broken-variant gpu tests: $(tail -1 "$OUT/verify_gpu_all_broken.txt") ($(( $(date +%s) - t0 )) s)" >> "$OUT/verify_gpu_all.log"
fi
for op in "$@"; do
    left=$(( total - ($(date +%s) - t0) ))
    if [ "$left" -lt 20 ]; then echo "$op: not run (time)" >> "$OUT/verify_gpu_all.log"; continue; fi
    lim=$(( left < per_op ? left : per_op ))
    start=$(date +%s)
    if timeout "$lim" python3 -m kreg.cli verify --device gpu --json $VERIFY_FLAGS --op "$op" \
            > "$OUT/one.json" 2>> "$OUT/verify_gpu_all.err"; then rc=0; else rc=$?; fi
    echo "$op: exit $rc after $(( $(date +%s) - start )) s (limit $lim s)" >> "$OUT/verify_gpu_all.log"
    python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$OUT/one.json" \
        >> "$OUT/verify_gpu_all.jsonl" 2>/dev/null
    python3 bench/verify_summary.py "$OUT/one.json" >> "$OUT/verify_gpu_all.txt" 2>/dev/null
done
rm -f "$OUT/one.json"
cat "$OUT/verify_gpu_all.log"
