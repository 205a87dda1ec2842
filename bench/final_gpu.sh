#!/usr/bin/env bash
# The end-of-session device run, in parts (each one `run` call of at most 600 s), results under $OUT:
#   PART=verify  kreg verify --device gpu (prove, numerics, speed of every named case: --speed-cases all,
#                so profiles rank by engine_us and choose per case) of every bf16 variant of the ops the
#                engine runs (or of $VERIFY_OPS, or the variants $VERIFY_NAMES; $VERIFY_EXTRA: more options), on a store seeded
#                from .kreg-seed (proofs of the same PTX by the same checker are reused); the store is saved
#                to $OUT/results.sqlite
#   PART=engine  bench/engine_gpu.py: Qwen3-4B all rows, then 4B from an 8192-token prompt (kreg rows);
#   PART=engine2 8B and 0.6B (kreg rows); both on the store of PART=verify (carried back as .kreg-seed)
#   PART=gemv    verify of every bf16 variant of the gemv family at every named case (the per-case
#                choices), the store saved, then the 0.6B and 4B kreg rows on it
#   PART=bench   gemv_vs_cublas, gemm_gpu, attention_decode_gpu, attention_prefill_gpu, then the GPU tests
# Usage (device, carry .whl .kreg-seed): OUT=dir PART=verify bash bench/final_gpu.sh
set -u
ENGINE_OPS="embedding rms_norm gemv rms_norm_gemv gemv_residual rms_norm_gemv_swiglu qk_norm_rope_kv attention_decode
attention_merge argmax decode_advance add_rms_norm silu_mul gemm qk_norm_rope_prefill attention_prefill"
case "${PART:-verify}" in
verify)
    . bench/device_env.sh
    names=${VERIFY_NAMES:-$(kreg list --json | python3 -c 'import json, sys
ops = sys.argv[1:]
print(" ".join(r["name"] for r in json.load(sys.stdin) if r["op"] in ops and "bf16" in r["types"].values()))' ${VERIFY_OPS:-$ENGINE_OPS})}
    export VERIFY_ARGS="--jobs ${VERIFY_JOBS:-4} --timeout ${VERIFY_CASE_TIMEOUT:-120} --speed-cases all ${VERIFY_EXTRA:-} $names"
    OUT=$OUT STEPS="verify save-store" VERIFY_TIMEOUT=${VERIFY_TIMEOUT:-540} bash bench/session_gpu.sh ;;
gemv)
    . bench/device_env.sh
    [ -f .kreg-seed/results.sqlite ] && cp .kreg-seed/results.sqlite "$KREG_HOME/results.sqlite"
    names=$(kreg list --json | python3 -c 'import json,sys; print(" ".join(r["name"] for r in json.load(sys.stdin)
        if r["op"] in ("gemv", "rms_norm_gemv", "gemv_residual", "rms_norm_gemv_swiglu") and "bf16" in r["types"].values()))')
    timeout 300 kreg verify --device gpu --json --jobs 4 --timeout 120 --speed-cases all $names \
        > "$OUT/verify_gemv.json" 2> "$OUT/verify_gemv.err"
    echo "verify exit $?" > "$OUT/engine.log"
    python3 bench/verify_summary.py "$OUT/verify_gemv.json" > "$OUT/verify_gemv.txt" 2>&1
    cp "$KREG_HOME/results.sqlite" "$OUT/results.sqlite"
    kreg profile show safe-only --device gpu > "$OUT/profile_safe.txt" 2>&1
    for s in 0.6b 4b; do
        timeout 150 python3 bench/engine_gpu.py "$OUT/engine_gpu_$s.txt" --shape $s --rows kreg --runs 3 \
            >> "$OUT/engine.log" 2>&1
        echo "$s exit $?" >> "$OUT/engine.log"
    done ;;
engine|engine2)
    . bench/device_env.sh
    [ -f .kreg-seed/results.sqlite ] && cp .kreg-seed/results.sqlite "$KREG_HOME/results.sqlite"
    if [ "$PART" = engine ]; then
        timeout 400 python3 bench/engine_gpu.py "$OUT/engine_gpu_4b.txt" --shape 4b \
            --rows kreg,kreg-nopdl,torch,hf,prefill --runs 3 > "$OUT/engine.log" 2>&1
        echo "4b exit $?" >> "$OUT/engine.log"
        timeout 150 python3 bench/engine_gpu.py "$OUT/engine_gpu_4b_ctx8192.txt" --shape 4b --rows kreg \
            --prompt-len 8192 --runs 2 >> "$OUT/engine.log" 2>&1
        echo "4b ctx8192 exit $?" >> "$OUT/engine.log"
    else
        for s in 8b 0.6b; do
            timeout 250 python3 bench/engine_gpu.py "$OUT/engine_gpu_$s.txt" --shape $s --rows kreg --runs 3 \
                >> "$OUT/engine.log" 2>&1
            echo "$s exit $?" >> "$OUT/engine.log"
        done
    fi ;;
bench)
    OUT=$OUT STEPS="bench:gemv_vs_cublas bench:gemm_gpu bench:attention_decode_gpu bench:attention_prefill_gpu gpu-tests" \
        STEP_TIMEOUT=150 bash bench/session_gpu.sh ;;
esac
