"""The symbolic execution builds the same z3 terms whatever Python's string hash seed: z3's work on a query
(what the variant budget counts) depends on its terms' ids, so an order that followed a set of register
names made a proof's cost, and a verdict near the budget, change from one process to the next. The terms'
ids are compared too: the same terms created in another order get other ids, and z3 orders by them."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers.paths import TESTS

SCRIPT = """
import hashlib, sys
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.env import LaunchEnv
from kreg.checker.prover.symbolic import Executor
from kreg.registry.catalog import load_catalog
cat = load_catalog()
v = next(e.variant for e in cat.kernels if e.variant.name == {name!r})
module = P.parse(compile_cuda(v.source_path.read_text(), v.source_path.name, tuple(v.options) + {opts!r}).ptx)
launch = v.launches[0]
env = LaunchEnv(v, cat.ops[v.op], module, launch)
h = hashlib.sha256()
for t in ("A", "B"):
  tr = Executor(module.kernel(launch.entry), module, env, t).run_kernel()
  for a in tr.accesses:
    h.update((a.addr.sexpr() + a.pc.sexpr() + str((a.addr.get_id(), a.pc.get_id()))).encode())
  for d in tr.defs:
    h.update((d.sexpr() + str(d.get_id())).encode())
print(len(tr.accesses), h.hexdigest())
"""


# the longest-rows-first build of the tensor-core prefill gave other terms under other seeds before the fix
@pytest.mark.parametrize("name,opts", [("attention_prefill_tc_bf16_safe", ("-DKREG_LONGEST_FIRST=1",))])
def test_symbolic_terms_do_not_depend_on_the_hash_seed(name, opts):
    out = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", SCRIPT.format(name=name, opts=opts)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        out.add(r.stdout.strip())
    assert len(out) == 1, out


PROVE = """
import json, sys
sys.path.insert(0, {tests!r})
from helpers.prover_corpus import corpus_ops, corpus_ptx, corpus_variant
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.prove import prove
from kreg.registry.catalog import load_catalog
cat = load_catalog()
out = {{}}
for name in {registry!r}:
    v = cat.find(name).variant
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
    r = prove(v, cat.ops[v.op], ptx, timeout_ms=4000, budget_ms=12000, isolate=False)
    out[name] = [{{p: (str(x.status), x.scope) for p, x in r.verdicts.items()}}, r.work["digest"], r.work["queries"]]
for name in {corpus!r}:
    v = corpus_variant(name)
    r = prove(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=4000, budget_ms=12000, isolate=False)
    out[name] = [{{p: (str(x.status), x.scope) for p, x in r.verdicts.items()}}, r.work["digest"], r.work["queries"]]
print(json.dumps(out))
"""
SAMPLE = {"registry": ["rms_norm_bf16_safe", "gemv_bf16_safe"], "corpus": ["matmul_tiled", "bug_off_by_one"]}


def _prove_in_child(seed: str, one_core: bool = False) -> dict:
    script = PROVE.format(tests=str(TESTS), **SAMPLE)
    pin = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if one_core else None
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, preexec_fn=pin,
                       env={**os.environ, "PYTHONHASHSEED": seed})
    assert r.returncode == 0, r.stderr[-3000:]
    import json
    return json.loads(r.stdout.splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs os.sched_setaffinity (Linux) to pin a core")
def test_verdicts_and_solver_work_are_the_same_idle_under_load_and_with_another_hash_seed():
    """Issue 26's determinism check, on a sample of registry and corpus variants: the prover idle, then on one core
    shared with two busy loops, then in a child with another hash seed, gives the same verdicts and the same
    per-query work (the digest of every solver call's step, result and resource units)."""
    idle = _prove_in_child("0")
    core = min(os.sched_getaffinity(0))
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             preexec_fn=lambda: os.sched_setaffinity(0, {core})) for _ in range(2)]
    try:
        loaded = _prove_in_child("0", one_core=True)
    finally:
        for b in busy:
            b.kill()
    seeded = _prove_in_child("12345")
    assert set(idle) == set(SAMPLE["registry"]) | set(SAMPLE["corpus"])
    assert all(q > 0 for _, _, q in idle.values())
    assert loaded == idle
    assert seeded == idle


SMT2 = """
import sys, z3
from kreg.checker.prover.solving import as_smt2
x = [z3.Int(f"x{i}") for i in range(30)]
fs = [x[i] * x[i + 1] + 3 > x[i + 2] - 1 for i in range(27)] + [z3.And(x[0] > 1, z3.Or(x[1] < 2, x[2] == x[3] * 7))]
def wrapper(fs):
    s = z3.Solver()
    s.add(*fs)
    return s.to_smt2()
print_ = wrapper if sys.argv[1] == "wrapper" else as_smt2
out = [print_(fs)]
for k in range(6):
    y = z3.Int(f"y{k}") + z3.IntVal(10 ** 6 + k) * z3.Int(f"z{k}")
    out += [str(y.get_id()), print_([y > 3, y < 7, z3.Or(y == 5, y * y == 9)]), print_([])]
print(repr(out))
"""


def test_integer_query_text_is_z3_s_and_leaves_the_term_ids_as_z3_s_wrapper_does():
    """solving.as_smt2 makes z3.Solver().to_smt2()'s C calls without the wrapper's Python round trips: the same
    text, and the main context's later terms numbered as after the wrapper (z3's simplify sorts by those ids)."""
    got = {how: subprocess.run([sys.executable, "-c", SMT2, how], capture_output=True, text=True, check=True).stdout
           for how in ("wrapper", "as_smt2")}
    assert got["as_smt2"] == got["wrapper"] and "declare-fun y5" in got["wrapper"]
