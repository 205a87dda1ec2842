#!/usr/bin/env bash
# The whole registry through `kreg verify --device gpu` in one device run, proofs included (z3 carried as
# a wheel in .whl/): numerics at every named case plus seeded ragged shapes, the speed of every named
# case against the copy bandwidth measured in the same process, each variant timed alone. Writes the
# JSON, a summary (verdicts, proofs, stage seconds per op) and the wall time under $OUT.
# Usage (device, carry .whl): OUT=dir bash bench/verify_gpu_registry.sh [verify args, e.g. --op add]
set -u
. bench/device_env.sh
log="$OUT/verify_gpu_registry.log"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"
  echo "$(nproc) CPUs; kreg verify --device gpu --json $*"; } > "$log" 2>&1
t0=$(date +%s)
# a smoke test first: a broken GPU path costs seconds, not the whole run
if ! timeout 120 kreg verify add_bf16_safe --device gpu --json > "$OUT/smoke.json" 2>> "$log"; then
    echo "smoke test failed after $(( $(date +%s) - t0 )) s" >> "$log"; tail -30 "$log"; head -c 3000 "$OUT/smoke.json"; exit 1
fi
echo "smoke test passed after $(( $(date +%s) - t0 )) s" >> "$log"
t0=$(date +%s)
timeout "${VERIFY_TIMEOUT:-570}" kreg verify --device gpu --json "$@" \
    > "$OUT/verify_gpu_registry.json" 2> "$OUT/verify_gpu_registry.err"
echo "exit code $? after $(( $(date +%s) - t0 )) s wall" >> "$log"
python3 bench/verify_summary.py "$OUT/verify_gpu_registry.json" > "$OUT/verify_gpu_registry.txt" 2>&1 || \
python3 - "$OUT" <<'PY' >> "$OUT/verify_gpu_registry.txt"
# the run was cut off: what the store holds (every verdict is stored as it is decided)
import json, sys
from kreg.registry.store import Store
for r in Store().query(stage="verdict"):
    p = r["payload"]
    print(r["op"], r["name"], p["verdict"], p["proofs"], p.get("stage_seconds"))
PY
cat "$log"; tail -14 "$OUT/verify_gpu_registry.txt"; tail -5 "$OUT/verify_gpu_registry.err"
