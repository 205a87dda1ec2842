#!/usr/bin/env bash
# Mid-session device run of the "engine" helper (<= 240 s): the Qwen3-4B decode step (fast set, 640
# cached positions) with and without programmatic dependent launch, one step's logits compared bit for
# bit, and the whole step (PDL on) with the gemv's L2 prefetch before its wait (-DGEMV_PREFETCH), other
# gemv knobs, the SwiGLU fused into the down projection (gemv_swiglu), and the safe set. Files:
# $OUT/bd_pdl.txt (the table), $OUT/bd_06b.txt (the same for the 0.6B shape, in the time left),
# $OUT/dev_engine.log.
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_engine.sh
set -u
. bench/device_env.sh
{ tail -5 "$OUT/pip.log"; } > "$OUT/dev_engine.log" 2>&1; rm -f "$OUT/pip.log"     # three files at most
t0=$(date +%s)
timeout 195 python3 bench/engine_step_breakdown.py "$OUT/bd_pdl.txt" --set fast --pdl both \
    --also pf3=gemv:-DGEMV_PREFETCH=3 \
    --also fused-pf3=gemv:-DGEMV_PREFETCH=3,gemv_swiglu:gemv_swiglu_bf16_safe,gemv_swiglu:-DGEMV_PREFETCH=3 \
    --also safe-fused-pf3=set:safe,gemv:-DGEMV_PREFETCH=3,gemv_swiglu:gemv_swiglu_bf16_safe,gemv_swiglu:-DGEMV_PREFETCH=3 \
    --also pf1=gemv:-DGEMV_PREFETCH=1 \
    --also fused=gemv_swiglu:gemv_swiglu_bf16_safe \
    --also s5-pf3=gemv:cfg=5x2x2x1,gemv:-DGEMV_PREFETCH=3 \
    --also s5-fused-pf3=gemv:cfg=5x2x2x1,gemv:-DGEMV_PREFETCH=3,gemv_swiglu:gemv_swiglu_bf16_safe,gemv_swiglu:-DGEMV_PREFETCH=3 \
    --also s8r2g1-pf3=gemv:cfg=8x2x1x1,gemv:-DGEMV_PREFETCH=3 \
    --also s2r1g4u2-pf3=gemv:cfg=2x1x4x2,gemv:-DGEMV_PREFETCH=3 \
    --also u2-pf3=gemv:cfg=4x2x2x2,gemv:-DGEMV_PREFETCH=3 \
    --also s4r4g2-pf3=gemv:cfg=4x4x2x1,gemv:-DGEMV_PREFETCH=3 \
    --also safe=set:safe \
    >> "$OUT/dev_engine.log" 2>&1
echo "breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_engine.log"
left=$(( 205 - ($(date +%s) - t0) ))
if [ $left -gt 30 ]; then      # the 0.6B shape (launch-bound: where PDL matters most), in the time left
    timeout $left python3 bench/engine_step_breakdown.py "$OUT/bd_06b.txt" --shape 0.6b --set fast --pdl both \
        --also pf3=gemv:-DGEMV_PREFETCH=3 --also s2r1g4u2-pf3=gemv:cfg=2x1x4x2,gemv:-DGEMV_PREFETCH=3 \
        --also fused-pf3=gemv:-DGEMV_PREFETCH=3,gemv_swiglu:gemv_swiglu_bf16_safe,gemv_swiglu:-DGEMV_PREFETCH=3 \
        >> "$OUT/dev_engine.log" 2>&1
    echo "0.6b breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_engine.log"
fi
tail -40 "$OUT/dev_engine.log"
