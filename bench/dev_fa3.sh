#!/usr/bin/env bash
# The fa3 helper's device run (OUT=dir timeout 180 bash bench/dev_fa3.sh), three files:
#   $OUT/fa3_probe.txt   bench/prefill_wg_dev.py probe: the wgmma RS / transpose-b layout on the H100 and in the emulator
#   $OUT/fa3_speed.txt   bench/prefill_wg_dev.py numerics (small cases + 4B T = 2048, float64 reference) and speed
#                        (Qwen3-4B heads at T = 2048, 8192 beside SDPA flash and the tc kernels) of the wg builds
#   $OUT/fa3_dev.txt     exit codes, times, stderr tails
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
step 30 probe python3 bench/prefill_wg_dev.py probe "$OUT/fa3_probe.txt"
step 75 speed python3 bench/prefill_wg_dev.py speed "$OUT/fa3_speed.txt" 64,3,1,1,1 64,4,1,1,1,1 128,3,1,1,1 128,3,1,1,1,1 64,2 128,2 64,3,1 64,3,1,1,0,1
step 45 numerics python3 bench/prefill_wg_dev.py numerics "$OUT/fa3_speed.txt" 64,3,1,1,1 64,4,1,1,1,1 128,3,1,1,1 128,3,1,1,1,1 64,2
cat "$OUT/fa3_probe.txt" "$OUT/fa3_speed.txt" "$E"
