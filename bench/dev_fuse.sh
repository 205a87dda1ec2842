#!/usr/bin/env bash
# Mid-session device run of the "fuse" helper (<= 240 s): the Qwen3-4B decode step (640 cached
# positions) with the fused decode ops (rms_norm_gemv qkv / lm_head, gemv_residual o / down,
# rms_norm_gemv_swiglu gate_up: 7 launches a layer) against the unfused step, fast and safe sets, PDL
# on (and off for the fused base), the fused ops' knobs (GEMV_MIN_BLOCKS: __launch_bounds__ capping the
# registers so 6 or 8 blocks fit an SM, for the wave count); the per-op breakdown of the fused step, then of
# the unfused one (same model), then 0.6B fused vs unfused and the fused ops' numerics on the H100 in
# the time left (8B left out: its random model takes the time). Files: $OUT/bd_fused_4b.txt,
# $OUT/bd_more.txt (unfused 4B breakdown, 0.6B, GPU numerics), $OUT/dev_fuse.log.
# Usage (device, carry .whl): OUT=dir timeout 240 bash bench/dev_fuse.sh
set -u
. bench/device_env.sh
{ tail -5 "$OUT/pip.log"; } > "$OUT/dev_fuse.log" 2>&1; rm -f "$OUT/pip.log"     # three files at most
ALL=gemv_residual:cfg=8x2x1x1,rms_norm_gemv:cfg=8x2x1x1,rms_norm_gemv_swiglu:cfg=8x2x1x1
ALL5=gemv_residual:cfg=5x2x2x1,rms_norm_gemv:cfg=5x2x2x1,rms_norm_gemv_swiglu:cfg=5x2x2x1
LB6=gemv_residual:-DGEMV_MIN_BLOCKS=6,rms_norm_gemv:-DGEMV_MIN_BLOCKS=6,rms_norm_gemv_swiglu:-DGEMV_MIN_BLOCKS=6
t0=$(date +%s)
timeout 125 python3 bench/engine_step_breakdown.py "$OUT/bd_fused_4b.txt" --set fast --fused on --pdl both \
    --also unfused=fused:off \
    --also safe-fused=set:safe \
    --also safe-unfused=set:safe,fused:off \
    --also s8r2g1=$ALL \
    --also swiglu-s4r1g2=rms_norm_gemv_swiglu:cfg=4x1x2x1 \
    --also swiglu-s8r1g1=rms_norm_gemv_swiglu:cfg=8x1x1x1 \
    --also resid-s8r2g1=gemv_residual:cfg=8x2x1x1 \
    --also s5=$ALL5 \
    --also lb6=$LB6 \
    --also unfused-lb6=fused:off,gemv:-DGEMV_MIN_BLOCKS=6 \
    --also swiglu-lb8=rms_norm_gemv_swiglu:-DGEMV_MIN_BLOCKS=8 \
    --also qkv-r3=rms_norm_gemv:cfg=4x3x2x1 \
    --also resid-s8r1g1=gemv_residual:cfg=8x1x1x1 \
    --also resid-s4r1g2=gemv_residual:cfg=4x1x2x1 \
    --also unsafe-rows=gemv_residual:gemv_residual_bf16_rows,rms_norm_gemv:rms_norm_gemv_bf16_rows,rms_norm_gemv_swiglu:rms_norm_gemv_swiglu_bf16_rows \
    >> "$OUT/dev_fuse.log" 2>&1
echo "fused 4b breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_fuse.log"
left=$(( 160 - ($(date +%s) - t0) ))
if [ $left -gt 25 ]; then      # the unfused step's per-op breakdown, same model
    timeout $left python3 bench/engine_step_breakdown.py /tmp/bd_unfused_4b.txt --set fast --pdl on \
        >> "$OUT/dev_fuse.log" 2>&1
    echo "unfused 4b breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_fuse.log"
    cat /tmp/bd_unfused_4b.txt >> "$OUT/bd_more.txt" 2>/dev/null
fi
left=$(( 185 - ($(date +%s) - t0) ))
if [ $left -gt 20 ]; then      # the 0.6B shape (launch-bound: the most to gain from fewer launches)
    timeout $left python3 bench/engine_step_breakdown.py /tmp/bd_06b.txt --shape 0.6b --set fast --fused on --pdl on \
        --also unfused=fused:off --also safe-fused=set:safe --also s8r2g1=$ALL --also s5=$ALL5 --also lb6=$LB6 \
        >> "$OUT/dev_fuse.log" 2>&1
    echo "0.6b breakdown exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_fuse.log"
    cat /tmp/bd_06b.txt >> "$OUT/bd_more.txt" 2>/dev/null
fi
left=$(( 215 - ($(date +%s) - t0) ))
if [ $left -gt 15 ]; then      # the fused ops' numerics on the H100 (every named case, no proof, no timing)
    timeout $left kreg verify --device gpu --no-prove --no-speed --jobs 4 \
        --op rms_norm_gemv --op gemv_residual --op rms_norm_gemv_swiglu >> "$OUT/bd_more.txt" 2>&1
    echo "gpu numerics exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/dev_fuse.log"
fi
tail -40 "$OUT/dev_fuse.log"
