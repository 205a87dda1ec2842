#!/usr/bin/env bash
# Second device run of the "engine" helper (<= 240 s): the Qwen3-4B decode step (fast set, 640 cached
# positions) with and without programmatic dependent launch (one step's logits compared bit for bit),
# then the whole step (PDL on) with the safe gemv's knobs (the L2 prefetch only in the first wave of
# blocks: on every block the first run measured it 130-230 us slower at 4B), the PDL trigger after the
# wait instead of before (-DKREG_PDL_LATE on every opting-in op), and the safe set; then the 0.6B and
# 8B shapes in the time left. Files: $OUT/bd_pdl.txt, $OUT/bd_more.txt (0.6B, 8B), $OUT/dev_engine.log.
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_engine.sh
set -u
. bench/device_env.sh
{ tail -5 "$OUT/pip.log"; } > "$OUT/dev_engine.log" 2>&1; rm -f "$OUT/pip.log"     # three files at most
LATE=gemv:-DKREG_PDL_LATE,add_rms_norm:-DKREG_PDL_LATE,silu_mul:-DKREG_PDL_LATE,qk_norm_rope_kv:-DKREG_PDL_LATE,rms_norm:-DKREG_PDL_LATE,embedding:-DKREG_PDL_LATE,argmax:-DKREG_PDL_LATE,decode_advance:-DKREG_PDL_LATE
t0=$(date +%s)
timeout 150 python3 bench/engine_step_breakdown.py "$OUT/bd_pdl.txt" --set fast --pdl both \
    --also s8r2g1=gemv:cfg=8x2x1x1 \
    --also s5=gemv:cfg=5x2x2x1 \
    --also s8r1g1=gemv:cfg=8x1x1x1 \
    --also s8r2g1u2=gemv:cfg=8x2x1x2 \
    --also s8r4g1=gemv:cfg=8x4x1x1 \
    --also s8r2g2=gemv:cfg=8x2x2x1 \
    --also s4r1g2=gemv:cfg=4x1x2x1 \
    --also s4r1g2u2=gemv:cfg=4x1x2x2 \
    --also pf1-wave=gemv:-DGEMV_PREFETCH=1,gemv:-DGEMV_PREFETCH_BLOCKS=1056 \
    --also pf3-wave=gemv:-DGEMV_PREFETCH=3,gemv:-DGEMV_PREFETCH_BLOCKS=1056 \
    --also s8r2g1-pf1-wave=gemv:cfg=8x2x1x1,gemv:-DGEMV_PREFETCH=1,gemv:-DGEMV_PREFETCH_BLOCKS=1056 \
    --also s8r2g1-pf1=gemv:cfg=8x2x1x1,gemv:-DGEMV_PREFETCH=1 \
    --also late=$LATE \
    --also safe-s8r2g1=set:safe,gemv:cfg=8x2x1x1 \
    --also safe=set:safe \
    >> "$OUT/dev_engine.log" 2>&1
echo "breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_engine.log"
left=$(( 200 - ($(date +%s) - t0) ))
if [ $left -gt 30 ]; then      # the 0.6B shape (launch-bound), in the time left
    timeout $left python3 bench/engine_step_breakdown.py /tmp/bd_06b.txt --shape 0.6b --set fast --pdl both \
        --also s8r2g1=gemv:cfg=8x2x1x1 --also s4r1g2u2=gemv:cfg=4x1x2x2 --also s2r1g4u2=gemv:cfg=2x1x4x2 \
        --also pf3=gemv:-DGEMV_PREFETCH=3 --also s4r1g2u2-pf3=gemv:cfg=4x1x2x2,gemv:-DGEMV_PREFETCH=3 \
        --also late=$LATE \
        >> "$OUT/dev_engine.log" 2>&1
    echo "0.6b breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_engine.log"
    cat /tmp/bd_06b.txt >> "$OUT/bd_more.txt" 2>/dev/null
fi
left=$(( 205 - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then      # the 8B shape (target 160 tok/s), in the time left
    timeout $left python3 bench/engine_step_breakdown.py /tmp/bd_8b.txt --shape 8b --set fast --pdl both \
        --also s8r2g1=gemv:cfg=8x2x1x1 --also s5=gemv:cfg=5x2x2x1 --also safe=set:safe \
        >> "$OUT/dev_engine.log" 2>&1
    echo "8b breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_engine.log"
    cat /tmp/bd_8b.txt >> "$OUT/bd_more.txt" 2>/dev/null
fi
tail -40 "$OUT/dev_engine.log"
