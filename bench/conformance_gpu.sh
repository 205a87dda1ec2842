#!/usr/bin/env bash
# Conformance on the GPU: the broken-variant tests (marked gpu), then `kreg verify --device gpu` of the
# add variants (numerics at every case, speed against the copy bandwidth measured in the same process).
# Results (with device and date) go to $OUT (default bench/results).
set -u
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
export KREG_HOME=$(mktemp -d) PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/conformance_gpu_device.txt" 2>&1
date -u +"%Y-%m-%d %H:%M UTC" >> "$OUT/conformance_gpu_device.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_broken_variants.py 2>&1 | tail -40 \
    | tee "$OUT/conformance_gpu_tests.txt"
timeout 150 python3 -m kreg.cli verify --device gpu --json --no-prove --op add \
    > "$OUT/verify_gpu_add.json" 2> "$OUT/verify_gpu_add.err"
echo "verify exit code $?" >> "$OUT/verify_gpu_add.err"
python3 bench/verify_summary.py "$OUT/verify_gpu_add.json" | tee "$OUT/verify_gpu_add.txt"
