# Sourced by the device scripts: $OUT made, the carried wheels (.whl/: z3-solver) installed, kreg
# installed from the tree, a fresh KREG_HOME.
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || cat "$OUT/pip.log"
export KREG_HOME=$(mktemp -d) PYTHONUNBUFFERED=1
