#!/usr/bin/env bash
# The whole registry on the GPU, in one device run: `kreg verify --device gpu` (numerics at every case
# plus seeded ragged shapes, speed of every case against the copy bandwidth measured in the same
# process), the emulator's bit-exactness corpus against this GPU, and the gpu-marked tests.
# Proofs are device-independent and run on the CPU (`kreg verify`), so this run skips the checker.
# Usage (device): OUT=dir bash bench/registry_gpu.sh [verify args, e.g. --op rms_norm]
set -u
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
export KREG_HOME=$(mktemp -d) PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"; } \
    > "$OUT/registry_gpu_device.txt" 2>&1
[ -n "${SKIP_EMU:-}" ] || timeout 120 python3 bench/emulator_bitexact.py --out "$OUT" >> "$OUT/registry_gpu_device.txt" 2>&1   # at most 8 files come back
[ -n "${SKIP_EMU:-}" ] || timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests 2>&1 | tail -30 > "$OUT/gpu_tests.txt"
timeout ${VERIFY_TIMEOUT:-420} python3 -m kreg.cli verify --device gpu --json --no-prove "$@" \
    > "$OUT/verify_gpu_registry.json" 2> "$OUT/verify_gpu_registry.err"
echo "verify exit code $?" >> "$OUT/verify_gpu_registry.err"
python3 bench/verify_summary.py "$OUT/verify_gpu_registry.json" > "$OUT/verify_gpu_registry.txt" 2>&1
tail -40 "$OUT/verify_gpu_registry.txt"
