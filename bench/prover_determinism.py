"""The prover's verdicts and solver work for every safe registry variant (or those named), on this machine: one
JSON line per variant (verdicts with scopes, the work summary of checker/prover/solving.py with its digest, the
CPU seconds), proved in child processes (--jobs at once), optionally beside --busy busy loops. --compare A B
checks two such files (two machines, or idle and loaded) give the same verdicts and work digests.
--records DIR also writes each proof's record (checker/prover/records.py) as DIR/<variant name>.json, and --yaml
each safe variant's share of its budget (`proof: {used}`) into its YAML: how the records shipped with the
built-in registry (kernels/proofs) and the YAML figures are made again after a checker or kernel change.

    python bench/prover_determinism.py --jobs 2 --out bench/results/prover_determinism_vm.jsonl
    python bench/prover_determinism.py --compare bench/results/prover_determinism_vm.jsonl bench/results/prover_determinism_h100.jsonl
    python bench/prover_determinism.py --all --jobs 12 --records kernels/proofs --yaml --out proofs.jsonl
    python bench/prover_determinism.py --unsafe --jobs 16 --records kernels/proofs --out unsafe.jsonl
    python bench/prover_determinism.py gemm_wgs_bf16_safe --replay     # then the re-check by its record (CPU s)
    python bench/prover_determinism.py --all --jobs 16 --records kernels/proofs --add-cores --out cores.jsonl
    python bench/prover_determinism.py --all --jobs 2 --records kernels/proofs --carry --out carry.jsonl

Records (--records) are made with each closed query's unsat core (solving.unsat_core, BvCores; not with --no-cores), which makes their replays fast;
--add-cores adds them to the records already in --records DIR by replaying each (no full search; the work must
come out the same). --carry makes the records in --records DIR again after a checker version that keeps the solving
of the one they were made by (checker/prover/prove.py CARRIES_FROM): each is replayed and kept, stamped with the new
version, where the replay reproduces it exactly (then it is the new version's full search), else the full search
runs; each line's work["carried"] says which.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import pathlib
import platform
import re
import subprocess
import sys
import time


def prove_one(name: str, budget_ms: int | None, replay: bool = False, follow: str | None = None,
              cores: bool = False, carry: bool = False) -> dict:
    from kreg.checker.prover.prove import prove
    from kreg.checker.ptx.compile import compile_cuda
    from kreg.registry.catalog import load_catalog
    cat = load_catalog()
    v = cat.find(name).variant
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
    t0 = time.process_time()
    budget = budget_ms or v.proof_budget_ms
    from kreg.checker.prover.records import load
    known = load(pathlib.Path(follow) / f"{name}.json") if follow else None
    if follow and known is None and not carry:      # carrying: no record, the full search
        return {"name": name, "op": v.op, "ptx_sha256": ptx.sha256, "budget_ms": budget, "record": None,
                "verdicts": {"stopped": f"no record in {follow}"}, "reasons": {}, "work": {}, "cpu_s": 0.0}
    try:
        r = prove(v, cat.ops[v.op], ptx.ptx, timeout_ms=10_000, budget_ms=budget, isolate=False, record=known,
                  cores=cores, carry=carry)
        if known is not None and not carry and ("replay" not in r.work or "fell_back" in r.work["replay"]
                                  or r.work["digest"] != known.work.get("digest")):
            raise RuntimeError(f"the record in {follow} did not replay to its own work: {r.work.get('replay')}")
        verdicts = {p: [str(x.status), x.scope] for p, x in r.verdicts.items()}
        reasons = {p: x.reason for p, x in r.verdicts.items() if x.status != "proven"}
        work, record = r.work, r.record.to_json() if r.record else None
    except Exception as e:          # WallClockStop among them: recorded, compared like any outcome
        verdicts, reasons, work, record = {"stopped": f"{type(e).__name__}: {e}"}, {}, {}, None
    out = {"name": name, "op": v.op, "ptx_sha256": ptx.sha256, "budget_ms": budget, "verdicts": verdicts,
           "reasons": reasons, "work": work, "cpu_s": round(time.process_time() - t0, 1), "record": record}
    if replay and record:           # the re-check `kreg verify` makes: the record just made, followed
        from kreg.checker.prover.records import Record
        t0 = time.process_time()
        try:
            again = prove(v, cat.ops[v.op], ptx.ptx, timeout_ms=10_000, budget_ms=budget, isolate=False,
                          record=Record.from_json(record))
            out["replay"] = {"cpu_s": round(time.process_time() - t0, 1), "same_digest":
                             again.work.get("digest") == work.get("digest"), **again.work.get("replay", {})}
        except Exception as e:      # WallClockStop among them
            out["replay"] = {"stopped": f"{type(e).__name__}: {e}"}
    return out


def write_used(name: str, used: float) -> None:
    """`used:` in the variant's `proof:` mapping, to two decimals (the YAML otherwise untouched)."""
    from kreg.registry.catalog import load_catalog
    path = pathlib.Path(load_catalog().find(name).variant.path)
    text = path.read_text()
    new, n = re.subn(r"(\bproof:\s*\{[^}]*\bused:\s*)[0-9.]+", lambda m: f"{m.group(1)}{used:.2f}", text)
    if n == 0:
        new, n = re.subn(r"(\bproof:\s*\{)", lambda m: f"{m.group(1)}used: {used:.2f}, ", text)
    if n == 0:
        new = text.rstrip("\n") + f"\nproof: {{used: {used:.2f}}}   # the share of the prover's budget its proof uses\n"
    path.write_text(new)


def _worker(args):
    return prove_one(*args)


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?") \
        if os.path.exists("/proc/cpuinfo") else platform.processor()
    import z3
    return (f"{platform.node()}: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"z3 {z3.get_full_version()}")


def compare(a_path: str, b_path: str) -> int:
    a, b = ({d["name"]: d for d in map(json.loads, open(p)) if "name" in d} for p in (a_path, b_path))
    both = sorted(set(a) & set(b))
    diff = [n for n in both if (a[n]["verdicts"], a[n]["work"].get("digest")) != (b[n]["verdicts"], b[n]["work"].get("digest"))]
    print(f"{len(both)} variants in both; {len(diff)} differ" + (f": {', '.join(diff)}" if diff else ""))
    only = sorted(set(a) ^ set(b))
    if only:
        print(f"in one file only: {', '.join(only)}")
    return 1 if diff else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="variants (default: every safe variant of the registry)")
    ap.add_argument("--dtype", help="only variants whose types include this dtype (bf16, f16)")
    ap.add_argument("--all", action="store_true", help="every variant of the registry, unsafe ones too")
    ap.add_argument("--unsafe", action="store_true", help="the unsafe variants of the registry only")
    ap.add_argument("--skip", default="", help="variants left out (comma-separated names)")
    ap.add_argument("--records", metavar="DIR", help="write each proof's record as DIR/<variant name>.json")
    ap.add_argument("--yaml", action="store_true", help="write each proven safe variant's `proof: {used}`")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--busy", type=int, default=0, help="busy loops to run beside the proofs")
    ap.add_argument("--budget-ms", type=int, help="one budget for all (default: each variant's own)")
    ap.add_argument("--replay", action="store_true", help="then re-check each by its record (its CPU s)")
    ap.add_argument("--no-cores", action="store_true",
                    help="records without unsat cores (a search that finding them would make too long; --add-cores later)")
    ap.add_argument("--add-cores", action="store_true",
                    help="replay each variant's record in --records DIR, adding its unsat cores (no full search)")
    ap.add_argument("--carry", action="store_true",
                    help="with --records DIR: carry its records over to this checker version (CARRIES_FROM) where a "
                         "replay reproduces them exactly, else the full search (records of this version: left out)")
    ap.add_argument("--out", help="JSON lines file (default: stdout)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    a = ap.parse_args()
    if a.compare:
        return compare(*a.compare)
    from kreg.registry.catalog import load_catalog
    cat = load_catalog()
    names = a.names or [e.name for e in cat.kernels if (a.all or (e.variant.safety == "safe") != a.unsafe)
                        and (not a.dtype or a.dtype in e.variant.types.values()) and not e.variant.vendor]
    names = [n for n in names if n not in set(a.skip.split(","))]
    if a.carry and a.records:       # those already carried (a record of this checker) are left as they are
        from kreg.checker.prover.prove import CHECKER_VERSION
        from kreg.checker.prover.records import load
        names = [n for n in names if getattr(load(pathlib.Path(a.records) / f"{n}.json"), "checker_version", None)
                 != CHECKER_VERSION]
    safe = {e.name for e in cat.kernels if e.variant.safety == "safe"}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
    out = open(a.out, "w") if a.out else sys.stdout
    t0 = time.monotonic()
    try:
        print(json.dumps({"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                          "jobs": a.jobs, "busy": a.busy, "variants": len(names)}), file=out, flush=True)
        with mp.get_context("fork").Pool(a.jobs, maxtasksperchild=1) as pool:
            follow = a.records if a.add_cores or a.carry else None
            jobs = [(n, a.budget_ms, a.replay, follow, bool(a.records) and not a.no_cores, a.carry) for n in names]
            for r in pool.imap_unordered(_worker, jobs):
                record = r.pop("record")
                print(json.dumps(r), file=out, flush=True)
                if a.records and record and "stopped" not in r["verdicts"]:
                    from kreg.checker.prover.records import Record
                    os.makedirs(a.records, exist_ok=True)
                    Record.from_json(record).save(pathlib.Path(a.records) / f"{r['name']}.json")
                proven = all(v[0] == "proven" and v[1] == "all-dims" for v in r["verdicts"].values()
                             if isinstance(v, list)) and "stopped" not in r["verdicts"]
                if a.yaml and r["name"] in safe and proven and not a.budget_ms:
                    write_used(r["name"], r["work"]["budget_used"])
                carried = {True: "  carried", False: "  full search"}.get(r["work"].get("carried", {}).get("exact"), "")
                print(f"{r['name']:<40} {r['cpu_s']:>7.1f} s  used {r['work'].get('budget_used')}{carried}  "
                      f"{' '.join(v[0] if isinstance(v, list) else v for v in r['verdicts'].values())}", file=sys.stderr)
        print(json.dumps({"wall_s": round(time.monotonic() - t0, 1)}), file=out, flush=True)
    finally:
        for b in busy:
            b.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
