#!/usr/bin/env bash
# What the device machine has: Python, packages, GPU, driver; and whether kreg compiles there to the
# same PTX bytes as on the CPU machines. Run: device run "bash bench/device_probe.sh" (carry .whl).
set -u
python3 --version
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -m pip list 2>/dev/null | grep -iE "cuda|nvidia|cupy|numpy|yaml|rich|z3|hypothesis|pytest|torch |safetensors|tokenizers|pathfinder"
python3 - <<'PY'
import hashlib, sys
sys.path.insert(0, ".")
try:
    import kreg.checker.ptx.compile as c
except Exception as e:
    print("import kreg failed:", e)
    raise SystemExit
from kreg.registry.catalog import load_catalog
cat = load_catalog()
for e in cat.kernels:
    v = e.variant
    r = c.compile_cuda(v.source_path.read_text(), v.source_path.name, v.options, use_cache=False)
    print("ptx", v.op, v.name, r.sha256)
print("headers", c.cuda_include_dir())
PY
