#!/usr/bin/env bash
# `kreg verify --device gpu` one op at a time, each with its own time limit, so a slow op costs only
# itself; every op's JSON is appended to verify_gpu_ops.jsonl as soon as it is done.
# Usage (device): OUT=dir bash bench/registry_gpu_by_op.sh SECONDS_PER_OP OP [OP ...]
set -u
OUT=${OUT:-bench/results}
per_op=$1; shift
mkdir -p "$OUT"
export KREG_HOME=$(mktemp -d) PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"; } > "$OUT/verify_gpu_ops.log"
for op in "$@"; do
    start=$(date +%s)
    if timeout "$per_op" python3 -m kreg.registry.cli verify --device gpu --json --no-prove --speed-cases largest \
            --op "$op" > "$OUT/one.json" 2>> "$OUT/verify_gpu_ops.log"; then rc=0; else rc=$?; fi
    echo "$op: exit $rc after $(( $(date +%s) - start )) s" >> "$OUT/verify_gpu_ops.log"
    python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))" "$OUT/one.json" \
        >> "$OUT/verify_gpu_ops.jsonl" 2>/dev/null
    python3 bench/verify_summary.py "$OUT/one.json" >> "$OUT/verify_gpu_ops.txt" 2>/dev/null
done
rm -f "$OUT/one.json"
cat "$OUT/verify_gpu_ops.log"
