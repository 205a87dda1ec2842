"""Prover timing table over the registry (and, with --corpus, the labelled prover corpus): wall time
per variant on one core, the solver work charged to its budget (z3 resource units as reference-machine
seconds: what the budget counts) and the four verdicts. Output is saved in bench/results/prover_timing.txt."""
from __future__ import annotations

import argparse
import datetime
import platform
import time
from pathlib import Path

import kreg.checker.prover.prove as prove
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.prove import CHECKER_VERSION, PROPS, prove_variant
from kreg.registry.catalog import load_catalog
from kreg.registry.schema import load_op, load_variant

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "prover_corpus"


def rows(corpus: bool, ops=(), safe_only=False):
    cat = load_catalog()
    for e in cat.kernels:
        v = e.variant
        if ops and not any(v.op == o or o.endswith("*") and v.op.startswith(o[:-1]) for o in ops):
            continue
        if safe_only and v.safety != "safe":
            continue
        yield "registry", v, cat.ops[v.op]
    if corpus:
        ops = {o.name: o for o in (load_op(p) for p in sorted((CORPUS / "ops").glob("*.yaml")))}
        for p in sorted(CORPUS.glob("*/*/*.yaml")):
            v = load_variant(p, ops)
            yield "corpus", v, ops[v.op]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="store_true")
    ap.add_argument("--timeout-ms", type=int, default=10000)
    ap.add_argument("--budget-ms", type=int, default=None, help="per variant (default: the timeout)")
    ap.add_argument("--op", action="append", default=[], help="only this op's variants (OP* for a prefix; repeatable)")
    ap.add_argument("--safe-only", action="store_true", help="only the registry's safe variants")
    a = ap.parse_args()
    print(f"# kreg prover timing  checker {CHECKER_VERSION}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
          f"  {platform.processor() or platform.machine()}  (one core, z3 per-query timeout {a.timeout_ms} ms, "
          f"budget {a.budget_ms or a.timeout_ms} ms a variant)")
    print(f"{'set':8s} {'variant':32s} {'safety':6s} {'seconds':>8s} {'work s':>7s}  " + "  ".join(f"{p:12s}" for p in PROPS))
    total = 0.0
    for where, v, op in rows(a.corpus, a.op, a.safe_only):
        ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
        prove.QUERY_LOG = log = []
        t = time.perf_counter()
        res = prove_variant(v, op, ptx, timeout_ms=a.timeout_ms, budget_ms=a.budget_ms, isolate=False)
        dt = time.perf_counter() - t
        work = sum(q["rlimit"] / prove.RLIMIT_PER_MS[q["kind"]] for q in log) / 1000
        total += dt if where == "registry" else 0
        cells = [res[p].status + ("*" if (res[p].scope or "").startswith("cases") else "") for p in PROPS]
        print(f"{where:8s} {v.name:32s} {v.safety:6s} {dt:8.2f} {work:7.2f}  " + "  ".join(f"{c:12s}" for c in cells))
    print(f"# registry total: {total:.2f} s   (* = proven for each named case, not for all dims)")


if __name__ == "__main__":
    main()
