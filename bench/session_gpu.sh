#!/usr/bin/env bash
# One device run of several steps, each with its own time limit, logs under $OUT/<step>.*:
#   gpu-tests   pytest -m gpu on the given test files ($GPU_TESTS)
#   verify      kreg verify --device gpu $VERIFY_ARGS --json (+ bench/verify_summary.py); verify2: $VERIFY2_ARGS
#   bench:X     python3 bench/X.py $OUT/X.txt
#   save-store  the results store to $OUT/results.sqlite (carry it back as $KREG_SEED)
#   engine      python3 bench/engine_gpu.py $OUT/engine_gpu.txt $ENGINE_ARGS
#   submit      kreg submit --device gpu of a correct candidate (tests/hostile/_common)
# A results store made on the CPU ($KREG_SEED/results.sqlite, if carried) seeds KREG_HOME, so proofs of
# the same PTX by the same checker are reused (proofs are device-independent).
# Usage (device, carry .whl [.kreg-seed]): OUT=dir STEPS="gpu-tests verify bench:gemm_gpu" bash bench/session_gpu.sh
set -u
. bench/device_env.sh
SEED=${KREG_SEED:-.kreg-seed}
[ -f "$SEED/results.sqlite" ] && cp "$SEED/results.sqlite" "$KREG_HOME/results.sqlite"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +"%Y-%m-%d %H:%M UTC"; nproc; } > "$OUT/session.log"
step_timeout() { echo "${STEP_TIMEOUT:-300}"; }
for step in ${STEPS:-gpu-tests}; do
    t0=$(date +%s)
    case "$step" in
    gpu-tests)
        timeout "$(step_timeout)" python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS:-tests} \
            > "$OUT/gpu-tests.txt" 2>&1; rc=$? ;;
    verify|verify2)
        args=VERIFY_ARGS; [ "$step" = verify2 ] && args=VERIFY2_ARGS
        timeout "${VERIFY_TIMEOUT:-400}" kreg verify --device gpu --json ${!args:-} \
            > "$OUT/$step.json" 2> "$OUT/$step.err"; rc=$?
        python3 bench/verify_summary.py "$OUT/$step.json" > "$OUT/$step.txt" 2>&1 ;;
    bench:*)
        b=${step#bench:}
        v="BENCH_ARGS_$b"
        timeout "$(step_timeout)" python3 "bench/$b.py" "$OUT/$b.txt" ${!v:-} > "$OUT/$b.out" 2> "$OUT/$b.err"; rc=$? ;;
    sanitize)          # $SANITIZE: "VARIANT:DIMS VARIANT:DIMS ..." each under compute-sanitizer memcheck
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
    submit)
        d=$(mktemp -d); cp tests/hostile/_common/src/hadd_ok.cu "$d/hadd_gpu.cu"
        printf 'op: hadd\nname: hadd_gpu\nsafety: safe\nsource: hadd_gpu.cu\nentry: hadd\ntypes: {T: f32}\nargs: [a, b, out, N]\nlaunch:\n  grid: ["cdiv(N, 256)"]\n  block: [256]\n' > "$d/hadd_gpu.yaml"
        cp -r tests/hostile/_common/kernels "$KREG_HOME/" 2>/dev/null
        timeout "$(step_timeout)" kreg submit "$d/hadd_gpu.cu" --device gpu --json > "$OUT/submit.json" 2> "$OUT/submit.err"; rc=$? ;;
    *) echo "unknown step $step"; rc=2 ;;
    esac
    echo "$step: exit $rc after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/session.log"
done
