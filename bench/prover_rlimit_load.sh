#!/bin/bash
# Machine independence of the prover's verdicts (checker prover-0.4, per-query z3 resource limits): a few
# variants proven idle, beside two CPU-bound busy loops, and with the proof and both loops on one core
# (taskset). Each variant is proven in a fresh process, as verify's proof stage does (in one process the
# terms of earlier variants change the ids z3 numbers later ones by, and through checker/prover/intabs.py's
# id-sorted products the integer problems themselves). Each run prints the four verdicts and a digest of
# every query's (kind, result, rlimit units); the three runs must agree on both (the wall times differ).
# Output: bench/results/prover_rlimit.txt. PYTHONHASHSEED is fixed (0, unless set): the symbolic executor
# builds its terms in set order, so the integer problems, and the solver work on them, change with the
# hash seed (z3's own work is seed-independent: prove.py copies every problem into a context of its own).
set -u
export PYTHONHASHSEED=${PYTHONHASHSEED:-0}
cd "$(dirname "$0")/.."
V=${V:-gemv_bf16_safe,gemv_f16_safe,qk_norm_rope_prefill_f16_safe,rms_norm_bf16_safe,argmax_bf16_vec,rows_shared,transpose_flat}
prove() {
  for v in ${V//,/ }; do
    $1 nice -n 10 python bench/prover_rlimit.py --sets registry,corpus --only "$v" --budget-ms 120000 | grep -v '^#'
  done
}
busy() { $1 nice -n 10 python -c "while True: pass" >/dev/null 2>&1 & echo $!; }
echo "## idle"; prove "" | tee /tmp/load_idle.txt
echo "## beside two busy loops"
a=$(busy ""); b=$(busy "")
prove "" | tee /tmp/load_busy.txt
kill "$a" "$b"
if command -v taskset >/dev/null; then
  echo "## one core (taskset -c 0), with two busy loops on it"
  a=$(busy "taskset -c 0"); b=$(busy "taskset -c 0")
  prove "taskset -c 0" | tee /tmp/load_core.txt
  kill "$a" "$b"
fi
strip() { sed -E 's/ +[0-9.]+s q=/ q=/' "$1"; }
for f in /tmp/load_busy.txt /tmp/load_core.txt; do
  [ -f "$f" ] && { if diff <(strip /tmp/load_idle.txt) <(strip "$f") >/dev/null; then echo "## $f: verdicts and solver work identical to idle"; else echo "## $f: DIFFERS from idle"; diff <(strip /tmp/load_idle.txt) <(strip "$f"); fi; }
done
