#!/usr/bin/env bash
# kreg.runtime on the GPU in one device run: its gpu-marked tests, the saxpy example, then conformance
# through it (the broken variants' gpu tests; `kreg verify --device gpu` of add, numerics and the
# largest case's speed). Results go to $OUT (default bench/results).
set -u
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
export KREG_HOME=$(mktemp -d) PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"
  python3 -c "import cupy, cuda.bindings; print('cupy', cupy.__version__, 'cuda-bindings', cuda.bindings.__version__)"
  python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . 2>&1 | tail -2
  python3 -c "import kreg.runtime" || python3 -m pip install -q --no-deps --no-index -e . 2>&1 | tail -2
} > "$OUT/runtime_gpu_device.txt" 2>&1
t() { local s=$SECONDS; "$@"; echo "(took $((SECONDS - s)) s)" >&2; }
t timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_runtime.py --durations=8 2>&1 | tail -40 \
    > "$OUT/runtime_gpu_tests.txt"
t timeout 60 python3 examples/saxpy_runtime.py --device gpu --n 1000003 > "$OUT/runtime_gpu_example.txt" 2>&1
t timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_broken_variants.py 2>&1 | tail -15 \
    > "$OUT/runtime_gpu_conformance.txt"
t timeout 150 python3 -m kreg.cli verify --device gpu --json --no-prove --op add --speed-cases largest \
    > "$OUT/runtime_gpu_verify_add.json" 2>> "$OUT/runtime_gpu_conformance.txt"
python3 bench/verify_summary.py "$OUT/runtime_gpu_verify_add.json" > "$OUT/runtime_gpu_verify_add.txt" 2>&1
tail -n 5 "$OUT"/runtime_gpu_*.txt
