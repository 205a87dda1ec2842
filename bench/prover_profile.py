"""Where a variant's proof spends its solver work: prove one registry variant (or a corpus file) with the
query log on, attributing every query's rlimit units (as reference-machine ms) to the stage of
_prove_launch that issued it: justify, caveats, epoch filter (_races' apart), each property's _decide.
Usage: python bench/prover_profile.py VARIANT_NAME [--budget-ms B] [--timeout-ms T] [-D NAME=VAL ...]"""
from __future__ import annotations

import argparse
import dataclasses
import collections
import time

import kreg.checker.prover.prove as prove
from kreg.checker.ptx.compile import compile_cuda
from kreg.registry.catalog import load_catalog
from kreg.registry.expr import parse

STAGE = ["other"]


def _wrap(name, label=None):
    f = getattr(prove, name)

    def g(*a, **k):
        old = STAGE[0]
        STAGE[0] = label(a) if label else name
        try:
            return f(*a, **k)
        finally:
            STAGE[0] = old
    setattr(prove, name, g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variant")
    ap.add_argument("--budget-ms", type=int, default=30000)
    ap.add_argument("--timeout-ms", type=int, default=10000)
    ap.add_argument("-D", action="append", default=[], help="extra -D compile option")
    ap.add_argument("--shared", default=None, help="dynamic shared bytes of every launch (an expression over dims)")
    a = ap.parse_args()
    cat = load_catalog()
    v = next(e.variant for e in cat.kernels if e.variant.name == a.variant)
    if a.shared:
        v = dataclasses.replace(v, launches=tuple(dataclasses.replace(x, shared=parse(a.shared)) for x in v.launches))
    opts = list(v.options) + [f"-D{d}" for d in a.D]
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, opts).ptx
    log = prove.QUERY_LOG = []
    orig = prove._limited_check

    def lc(*args, **kw):
        n = len(log)
        r = orig(*args, **kw)
        for q in log[n:]:
            q["stage"] = STAGE[0]
        return r
    prove._limited_check = lc
    _wrap("_justify")
    _wrap("_caveats")
    _wrap("_decide", lambda args: "decide:" + args[0])
    _wrap("_closes", lambda args: STAGE[0] + "/closes " + ((args[2].name[-3:]) if args[2] is not None else "-"))
    _wrap("_refute_together", lambda args: STAGE[0] + "/together")
    _wrap("_small_model", lambda args: STAGE[0] + "/small-model")
    orig_races = prove._races

    def races(*args, **kw):
        old = STAGE[0]
        STAGE[0] = "epoch filter"
        try:
            return orig_races(*args, **kw)
        finally:
            STAGE[0] = old
    prove._races = races
    t = time.perf_counter()
    res = prove.prove_variant(v, cat.ops[v.op], ptx, timeout_ms=a.timeout_ms, budget_ms=a.budget_ms, isolate=False)
    dt = time.perf_counter() - t
    by = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for q in log:
        s = by[q["stage"]]
        s[0] += 1
        s[1] += q["rlimit"] / prove.RLIMIT_PER_MS[q["kind"]]
        s[2][q["result"]] += 1
    print(f"# {v.name} {' '.join(a.D)} budget {a.budget_ms} ms  wall {dt:.1f} s  checker {prove.CHECKER_VERSION}")
    for st, (n, ms, rc) in by.items():
        print(f"{st:34s} {n:5d} queries {ms:9.0f} ms  {dict(rc)}")
    print(f"{'total':34s} {len(log):5d} queries {sum(x[1] for x in by.values()):9.0f} ms")
    for p, r in res.items():
        print(f"{p:13s} {r.status:8s} {r.scope or ''}  {(r.reason or '')[:200]}")


if __name__ == "__main__":
    main()
