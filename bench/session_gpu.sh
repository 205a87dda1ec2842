#!/usr/bin/env bash
# The device session: build kreg on the GPU machine, check and time there, each step with its own time
# limit, logs and results under $OUT (default bench/results). Setup: the carried wheels (.whl/: z3-solver)
# installed, kreg installed from the tree, a fresh KREG_HOME; a results store made on the CPU
# ($KREG_SEED/results.sqlite, default .kreg-seed, if carried) seeds it, so proofs of the same PTX by the
# same checker are reused (proofs are device-independent). Steps ($STEPS, in order):
#   gpu-tests      pytest -m gpu on the given test files ($GPU_TESTS, default tests)
#   verify         kreg verify --device gpu $VERIFY_ARGS --json (+ bench/verify_summary.py); verify2: $VERIFY2_ARGS
#   verify-engine  the same for every bf16 variant of the ops the engine runs and their untyped ones (decode_advance)
#                  ($VERIFY_OPS to choose others; $VERIFY_SAFETY, e.g. "safe", only those of that safety: enough for
#                  safe-only rows), --speed-cases all (profiles rank by every named case and choose per case);
#                  KREG_MEMORY_MB (default 20480) the conformance child's host memory: the gemm cases' float64 arrays
#                  passed 20 GB on 2026-11-28 (an environment error, exit 3, nothing stored: the variant is missing)
#   sanitize       $SANITIZE: "VARIANT:DIMS ..." each under compute-sanitizer memcheck (bench/one_case_gpu.py)
#   save-store     the results store to $OUT/results.sqlite (carry it back as $KREG_SEED for the engine)
#   bench:X        python3 bench/X.py $OUT/X.txt $BENCH_ARGS_X
#   engine         python3 bench/engine_gpu.py $OUT/engine_gpu.txt $ENGINE_ARGS (on the store of verify-engine)
#   engine:X       python3 bench/engine_gpu.py $OUT/engine_X.txt $ENGINE_ARGS_X (several engine runs in one session)
#   submit         kreg submit --device gpu of a correct candidate (tests/data/hostile/_common)
#   records-safe   the proof records of the safe variants made again (a full search each: bench/prover_determinism.py
#                  --records kernels/proofs --yaml, $RECORDS_JOBS jobs, default 16), each safe YAML's `used` with them:
#                  $OUT/records_safe.tar (the records and YAMLs it wrote), $OUT/records_safe.jsonl (their work);
#                  $RECORDS_NAMES to choose some, $RECORDS_SKIP (comma-separated) to leave some out, $RECORDS_TIMEOUT
#                  (default 480 s) the step's limit: a variant the limit stops has no record; $RECORDS_FLAGS more
#                  flags (--no-cores: records without unsat cores, for searches that finding them makes too long)
#   records-unsafe the same for the unsafe variants: $OUT/records_unsafe.tar
#   records-cores  the unsat cores (solving.unsat_core, BvCores) added to every record in kernels/proofs by replaying it
#                  (bench/prover_determinism.py --all --add-cores: no full search, the same work): $OUT/records_cores.tar
#   records-carry  every record in kernels/proofs made again after a checker version that keeps the solving of the one
#                  that made them (prove.CARRIES_FROM; bench/prover_determinism.py --all --carry: a replay each, the
#                  full search where it does not reproduce): $OUT/records_carry.tar, $OUT/records_carry.jsonl
#   records-tests  the test records (tests/helpers/recorded.py) made again by the proving tests ($RECORDS_TESTS,
#                  default tests/checker tests/kernels) with KREG_REMAKE_RECORDS=1 on $RECORDS_JOBS workers:
#                  ($RECORDS_REMAKE=cores: their cores added by replaying them instead; =carry: carried, as records-carry);
#                  $OUT/records_tests.tar holds the records they wrote (delete tests/data/records before unpacking
#                  every part, so records no test asks for go); $OUT/records-tests.txt the pytest log
# Usage (device, carry .whl [.kreg-seed]):
#   OUT=dir STEPS="verify-engine save-store engine" ENGINE_ARGS="--shape 4b --rows kreg,torch,prefill" bash bench/session_gpu.sh
#   OUT=dir STEPS="gpu-tests bench:gemv_vs_cublas bench:gemm_gpu bench:attention_decode_gpu" bash bench/session_gpu.sh
#   OUT=dir STEPS="engine:4b engine:06b" ENGINE_ARGS_4b="--shape 4b --rows kreg,torch" ENGINE_ARGS_06b="--shape 0.6b" ...
#   OUT=dir STEPS="records-safe" bash bench/session_gpu.sh; then records-unsafe, records-tests (one call each)
# A verify stopped by its limit ($VERIFY_TIMEOUT) is interrupted: what it decided is in the store and its JSON.
set -u
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > "$OUT/pip.log" 2>&1 || cat "$OUT/pip.log"
export KREG_HOME=$(mktemp -d) PYTHONUNBUFFERED=1
SEED=${KREG_SEED:-.kreg-seed}
[ -f "$SEED/results.sqlite" ] && cp "$SEED/results.sqlite" "$KREG_HOME/results.sqlite"
ENGINE_OPS="embedding rms_norm gemv rms_norm_gemv gemv_residual rms_norm_gemv_swiglu qk_norm_rope_kv attention_decode
attention_merge argmax decode_advance add_rms_norm silu_mul gemm qk_norm_rope_prefill attention_prefill"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"; nproc; } > "$OUT/session.log"
step_timeout() { echo "${STEP_TIMEOUT:-300}"; }
verify() {   # verify STEP ARGS...: kreg verify --device gpu --json ARGS, its summary
    local step=$1; shift
    timeout -s INT -k 30 "${VERIFY_TIMEOUT:-400}" kreg verify --device gpu --json "$@" > "$OUT/$step.json" 2> "$OUT/$step.err"
    local rc=$?
    python3 bench/verify_summary.py "$OUT/$step.json" > "$OUT/$step.txt" 2>&1
    return $rc
}
for step in ${STEPS:-gpu-tests}; do
    t0=$(date +%s)
    case "$step" in
    gpu-tests)
        timeout "$(step_timeout)" python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS:-tests} \
            > "$OUT/gpu-tests.txt" 2>&1; rc=$? ;;
    verify|verify2)
        args=VERIFY_ARGS; [ "$step" = verify2 ] && args=VERIFY2_ARGS
        verify "$step" ${!args:-}; rc=$? ;;
    verify-engine)
        names=$(kreg list --json | VERIFY_SAFETY=${VERIFY_SAFETY:-} python3 -c 'import json, os, sys
ops, safety = sys.argv[1:], os.environ["VERIFY_SAFETY"].split()
print(" ".join(r["name"] for r in json.load(sys.stdin)
               if r["op"] in ops and (not r["types"] or "bf16" in r["types"].values())
               and (not safety or r["safety"] in safety)))' ${VERIFY_OPS:-$ENGINE_OPS})
        verify "$step" --jobs "${VERIFY_JOBS:-4}" --timeout "${VERIFY_CASE_TIMEOUT:-120}" --speed-cases all $names; rc=$? ;;
    bench:*)
        b=${step#bench:}
        v="BENCH_ARGS_$b"
        timeout "$(step_timeout)" python3 "bench/$b.py" "$OUT/$b.txt" ${!v:-} > "$OUT/$b.out" 2> "$OUT/$b.err"; rc=$? ;;
    sanitize)
        rc=0
        for vd in ${SANITIZE:-}; do
            timeout 120 compute-sanitizer --tool memcheck --print-limit 5 python3 bench/one_case_gpu.py "${vd%%:*}" "${vd#*:}" \
                >> "$OUT/sanitize.txt" 2>&1 || rc=$?
        done ;;
    save-store)
        cp "$KREG_HOME/results.sqlite" "$OUT/results.sqlite"; rc=$? ;;
    engine)
        timeout "${ENGINE_TIMEOUT:-500}" python3 bench/engine_gpu.py "$OUT/engine_gpu.txt" ${ENGINE_ARGS:-} \
            > "$OUT/engine_gpu.out" 2> "$OUT/engine_gpu.err"; rc=$? ;;
    engine:*)
        e=${step#engine:}
        v="ENGINE_ARGS_$e"
        timeout "${ENGINE_TIMEOUT:-500}" python3 bench/engine_gpu.py "$OUT/engine_$e.txt" ${!v:-} \
            > "$OUT/engine_$e.out" 2> "$OUT/engine_$e.err"; rc=$? ;;
    submit)
        d=$(mktemp -d); cp tests/data/hostile/_common/src/hadd_ok.cu "$d/hadd_gpu.cu"
        printf 'op: hadd\nname: hadd_gpu\nsafety: safe\nsource: hadd_gpu.cu\nentry: hadd\ntypes: {T: f32}\nargs: [a, b, out, N]\nlaunch:\n  grid: ["cdiv(N, 256)"]\n  block: [256]\n' > "$d/hadd_gpu.yaml"
        cp -r tests/data/hostile/_common/kernels "$KREG_HOME/" 2>/dev/null
        timeout "$(step_timeout)" kreg submit "$d/hadd_gpu.cu" --device gpu --json > "$OUT/submit.json" 2> "$OUT/submit.err"; rc=$? ;;
    records-safe|records-unsafe)
        which=${step#records-}
        flags="--yaml"; [ "$which" = unsafe ] && flags="--unsafe"
        touch "$OUT/.records-start"
        timeout -k 20 "${RECORDS_TIMEOUT:-480}" python3 bench/prover_determinism.py ${RECORDS_NAMES:-} --jobs "${RECORDS_JOBS:-16}" \
            --skip "${RECORDS_SKIP:-}" \
            --records kernels/proofs $flags ${RECORDS_FLAGS:-} --out "$OUT/records_$which.jsonl" 2> "$OUT/records_$which.err"; rc=$?
        find kernels -type f -newer "$OUT/.records-start" | sort > "$OUT/records_$which.list"
        tar -cf "$OUT/records_$which.tar" -T "$OUT/records_$which.list"; rm -f "$OUT/.records-start" ;;
    records-cores)
        touch "$OUT/.records-start"
        timeout -k 20 "${RECORDS_TIMEOUT:-480}" python3 bench/prover_determinism.py --all --add-cores --jobs "${RECORDS_JOBS:-16}" \
            --skip "${RECORDS_SKIP:-}" --records kernels/proofs --out "$OUT/records_cores.jsonl" 2> "$OUT/records_cores.err"; rc=$?
        find kernels/proofs -type f -newer "$OUT/.records-start" | sort > "$OUT/records_cores.list"
        tar -cf "$OUT/records_cores.tar" -T "$OUT/records_cores.list"; rm -f "$OUT/.records-start" ;;
    records-carry)
        touch "$OUT/.records-start"
        timeout -k 20 "${RECORDS_TIMEOUT:-480}" python3 bench/prover_determinism.py --all --carry --jobs "${RECORDS_JOBS:-16}" \
            --skip "${RECORDS_SKIP:-}" --records kernels/proofs --out "$OUT/records_carry.jsonl" 2> "$OUT/records_carry.err"; rc=$?
        find kernels/proofs -type f -newer "$OUT/.records-start" | sort > "$OUT/records_carry.list"
        tar -cf "$OUT/records_carry.tar" -T "$OUT/records_carry.list"; rm -f "$OUT/.records-start" ;;
    records-tests)
        touch "$OUT/.records-start"
        KREG_REMAKE_RECORDS=${RECORDS_REMAKE:-1} timeout -k 20 "${RECORDS_TIMEOUT:-480}" python3 -m pytest -q -p no:cacheprovider \
            -n "${RECORDS_JOBS:-16}" ${RECORDS_TESTS:-tests/checker tests/kernels} > "$OUT/records-tests.txt" 2>&1; rc=$?
        find tests/data/records -name '*.json' -newer "$OUT/.records-start" | sort > "$OUT/records_tests.list"
        tar -cf "$OUT/records_tests.tar" -T "$OUT/records_tests.list"; rm -f "$OUT/.records-start" ;;
    *) echo "unknown step $step"; rc=2 ;;
    esac
    echo "$step: exit $rc after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/session.log"
done
