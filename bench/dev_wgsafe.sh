#!/usr/bin/env bash
# The wgsafe helper's device run (OUT=dir timeout 180 bash bench/dev_wgsafe.sh), three files:
#   $OUT/wgsafe_speed.txt   bench/prefill_wg_dev.py speed: Qwen3-4B heads at T = 2048, 8192 beside SDPA flash and the
#                           tc kernels (safe, tc_lf): the registered (now safe, proven) wgmma prefill, built in block
#                           order (128,2: KREG_LONGEST_FIRST=0), and the build registered before (longest rows first,
#                           128,2,0,1,0,0,1), bf16 and f16
#   $OUT/wgsafe_verify.txt  kreg verify --device gpu --no-prove --no-speed of attention_prefill_wg_{bf16,f16} at every
#                           named case up to 50 MB of buffers, summarised by bench/verify_summary.py
#   $OUT/wgsafe_dev.txt     exit codes, times, stderr tails
set -u
. bench/device_env.sh
rm -f "$OUT/pip.log"
E="$OUT/wgsafe_dev.txt"; : > "$E"
step() {  # step SECONDS NAME CMD...: run with a time limit, log exit code, time and stderr tail
    local lim=$1 name=$2; shift 2
    local t0=$(date +%s)
    timeout "$lim" "$@" 2> /tmp/wgsafe_err.txt
    echo "== $name exit $? after $(( $(date +%s) - t0 )) s" >> "$E"
    tail -n 8 /tmp/wgsafe_err.txt >> "$E"
}
export FA3_SAFE=1
step 35 speed-bf16 python3 bench/prefill_wg_dev.py speed "$OUT/wgsafe_speed.txt" 128,2 128,2,0,1,0,0,1
step 30 speed-f16 env DT=f16 python3 bench/prefill_wg_dev.py speed "$OUT/wgsafe_speed.txt" 128,2 128,2,0,1,0,0,1
step 80 verify kreg verify --device gpu --no-prove --no-speed --json --max-case-mb 50 attention_prefill_wg_bf16 \
    attention_prefill_wg_f16 > /tmp/wgsafe_verify.json
[ -s /tmp/wgsafe_verify.json ] && python3 bench/verify_summary.py /tmp/wgsafe_verify.json > "$OUT/wgsafe_verify.txt" 2>> "$E"
cat "$OUT/wgsafe_speed.txt" "$OUT/wgsafe_verify.txt" "$E"
