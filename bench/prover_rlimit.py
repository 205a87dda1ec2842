"""Calibration of the prover's per-query z3 resource limits (checker/prover/prove.py RLIMIT_PER_MS) and the check
that verdicts do not depend on the machine's speed or load.

  --calibrate: the 0.3 limits (the nominal ms as wall-clock timeout, no rlimit); every query's rlimit
               count and wall time is recorded: closed queries show how much work they need per nominal
               ms, queries stopped by the clock show how much work z3 does per ms on this machine.
  (default):   the 0.4 limits; prints every variant's four verdicts (status, scope, what stopped a query),
               the rlimit units its queries used and a digest of every query's (kind, result, units), so
               that two runs (idle, loaded) can be diffed.
Variants run in process, one after another (the registry at --timeout-ms 10000, the corpus at 4000)."""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

import kreg.checker.prover.prove as prove
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.prove import PROPS, prove_variant
from kreg.registry.catalog import load_catalog
from kreg.registry.schema import load_op, load_variant

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "prover_corpus"


def rows(sets, only):
    if "registry" in sets:
        cat = load_catalog()
        for e in cat.kernels:
            yield "registry", e.variant, cat.ops[e.variant.op], 10000
    if "corpus" in sets:
        ops = {o.name: o for o in (load_op(p) for p in sorted((CORPUS / "ops").glob("*.yaml")))}
        for p in sorted(CORPUS.glob("*/*/*.yaml")):
            v = load_variant(p, ops)
            yield "corpus", v, ops[v.op], 4000
    return only


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--sets", default="registry,corpus")
    ap.add_argument("--only", default="", help="comma-separated variant names")
    ap.add_argument("--safe-only", action="store_true")
    ap.add_argument("--log", help="write every query as JSON lines here")
    ap.add_argument("--budget-ms", type=int, default=None,
                    help="per variant (default 30000 for the registry, 3 x the timeout for the corpus)")
    a = ap.parse_args()
    prove.CALIBRATE = a.calibrate
    only = set(filter(None, a.only.split(",")))
    log = []
    for where, v, op, tmo in rows(a.sets.split(","), only):
        if only and v.name not in only or a.safe_only and v.safety != "safe":
            continue
        ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
        prove.QUERY_LOG = []
        t = time.perf_counter()
        res = prove_variant(v, op, ptx, timeout_ms=tmo, budget_ms=a.budget_ms or (3 * tmo if where == "corpus" else 30000),
                            isolate=False)
        dt = time.perf_counter() - t
        q = prove.QUERY_LOG
        for e in q:
            e["variant"] = v.name
        log += q
        cells = " ".join(f"{p}={res[p].status}{'*' if (res[p].scope or '').startswith('cases') else ''}"
                         for p in PROPS)
        digest = hashlib.sha256(json.dumps([(e["kind"], e["result"], e["rlimit"]) for e in q]).encode()).hexdigest()[:10]
        stops = sorted({(e["why"] or "").split(" ")[0] for e in q if e["result"] == "unknown"})
        print(f"{where:8s} {v.name:32s} {dt:6.2f}s q={len(q):4d} rl={sum(e['rlimit'] for e in q):>11d} "
              f"{cells} stops={','.join(stops) or '-'} work={digest}", flush=True)
        for p in PROPS:
            if res[p].status != "proven" or res[p].scope != "all-dims":
                print(f"    {p}: {res[p].status} {res[p].scope} {res[p].reason}", flush=True)
    prove.QUERY_LOG = None
    if a.log:
        Path(a.log).write_text("".join(json.dumps(e) + "\n" for e in log))
    for kind in ("bv", "int"):
        ks = [e for e in log if e["kind"] == kind]
        closed = [e for e in ks if e["result"] != "unknown"]
        stopped = [e for e in ks if e["result"] == "unknown"]
        print(f"# {kind}: {len(ks)} queries, {len(closed)} closed, {len(stopped)} stopped")
        if closed:
            need = [e["rlimit"] / e["nominal_ms"] for e in closed]
            print(f"#   closed: rlimit units per nominal ms needed: median {statistics.median(need):.0f}  "
                  f"p99 {pct(need, .99):.0f}  max {max(need):.0f}   max units {max(e['rlimit'] for e in closed)}")
            rate = [e["rlimit"] / e["ms"] for e in closed if e["ms"] >= 50]
            if rate:
                print(f"#   closed in >= 50 ms: units per ms of wall time: median {statistics.median(rate):.0f} "
                      f"min {min(rate):.0f} max {max(rate):.0f} (n={len(rate)})")
        if stopped:
            rate = [e["rlimit"] / e["ms"] for e in stopped if e["ms"] > 0]
            print(f"#   stopped: units per ms of wall time: median {statistics.median(rate):.0f}  "
                  f"min {min(rate):.0f}  max {max(rate):.0f}")
            for e in stopped[:40]:
                print(f"#     {e['variant']:30s} nominal {e['nominal_ms']:6d} ms  {e['ms']:8.1f} ms  "
                      f"{e['rlimit']:>10d} units  {e['why']}")


if __name__ == "__main__":
    sys.exit(main())
