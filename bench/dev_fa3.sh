#!/usr/bin/env bash
# The fa3 helper's device run (OUT=dir timeout 180 bash bench/dev_fa3.sh), three files:
#   $OUT/fa3_speed.txt   bench/prefill_wg_dev.py speed: Qwen3-4B heads at T = 2048, 8192 beside SDPA flash and the
#                        tc kernels (safe, tc_lf), the wgmma prefill builds (CFG = BN,STAGES[,PIPE[,MINB[,PINGPONG[,QREG]]]]),
#                        bf16, then f16 for the registered build
#   $OUT/fa3_verify.txt  kreg verify --device gpu --no-prove --no-speed of the registered attention_prefill_wg_{bf16,f16}
#                        at every named case up to 50 MB of buffers, summarised by bench/verify_summary.py
#   $OUT/fa3_dev.txt     exit codes, times, stderr tails; tests/test_wgmma_rs.py's GPU tests (the probe on the H100)
# (Run 1's layout probe and build sweep: python3 bench/prefill_wg_dev.py probe|numerics|speed, in
# bench/results/attention_prefill_wg_dev_2026-11-24.txt.)
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/fa3_dev.txt"; : > "$E"
step() {  # step SECONDS NAME CMD...: run with a time limit, log exit code, time and stderr tail
    local lim=$1 name=$2; shift 2
    local t0=$(date +%s)
    timeout "$lim" "$@" 2> /tmp/fa3_err.txt
    echo "== $name exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
    tail -n 8 /tmp/fa3_err.txt >> "$E"
}
export FA3_SAFE=1
step 35 speed-bf16 python3 bench/prefill_wg_dev.py speed "$OUT/fa3_speed.txt" 128,2 128,3 128,2,0,1,0,1 128,3,1 128,3,0,1,0,1
step 20 speed-f16 env DT=f16 python3 bench/prefill_wg_dev.py speed "$OUT/fa3_speed.txt" 128,2 64,2
step 75 verify kreg verify --device gpu --no-prove --no-speed --json --max-case-mb 50 attention_prefill_wg_bf16 \
    attention_prefill_wg_f16 > /tmp/fa3_verify.json
[ -s /tmp/fa3_verify.json ] && python3 bench/verify_summary.py /tmp/fa3_verify.json > "$OUT/fa3_verify.txt" 2>> "$E"
step 20 gpu-tests python3 -m pytest -q -p no:cacheprovider tests/test_wgmma_rs.py -k gpu >> "$E"
cat "$OUT/fa3_speed.txt" "$OUT/fa3_verify.txt" "$E"
