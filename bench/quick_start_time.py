"""The README quick start, `kreg verify` of the whole built-in registry on the CPU (proofs and CPU numerics),
timed on this machine in a fresh KREG_HOME each run: idle, then beside N busy loops (N = 2 x the cores is a 2x
load); one JSON line per run (machine, busy loops, the load average sampled through the run, wall and CPU seconds,
exit code, per variant its verdict and proofs), then whether every run gave the same verdicts and proofs.

    python bench/quick_start_time.py --busy 0 4 --out bench/results/quick_start_vm.jsonl
    python bench/quick_start_time.py --busy 0 32 --jobs 16 --out ...    # a 16-core host: --jobs passed to kreg verify
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time


def run(busy: int, jobs: int | None = None, machine: str = "") -> dict:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        with tempfile.TemporaryDirectory(prefix="kreg-quick-start-") as home:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.time()
            p = subprocess.Popen(["kreg", "verify", "--json", *(["--jobs", str(jobs)] if jobs else [])], env=os.environ | {"KREG_HOME": home},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            loads = []
            while True:
                try:
                    out, err = p.communicate(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    loads.append(os.getloadavg()[0])
            wall = time.time() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        for q in loops:
            q.kill()
    try:
        variants = json.loads(out)["variants"]
    except (ValueError, KeyError):
        variants = []
    return {"date": datetime.date.today().isoformat(), "machine": machine or platform.node(), "cores": os.cpu_count(),
            "busy_loops": busy, "jobs": jobs or 2, "load_avg_1min": {"mean": round(sum(loads) / max(1, len(loads)), 2),
                                                  "max": round(max(loads, default=0.0), 2)},
            "wall_s": round(wall, 1), "cpu_s": round(after.ru_utime - before.ru_utime, 1),
            "exit": p.returncode, "stderr_tail": err[-400:],
            "variants": {v["name"]: [v["verdict"], v.get("proofs")] for v in variants},
            "stage_seconds": {v["name"]: v.get("stage_seconds") for v in variants}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, nargs="+", default=[0], help="busy loops beside each run")
    ap.add_argument("--jobs", type=int, default=None, help="kreg verify --jobs (default: its own, 2 on the CPU)")
    ap.add_argument("--machine", default="", help="the machine's name in the results (default: the host name)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    runs = []
    for busy in args.busy:
        r = run(busy, args.jobs, args.machine)
        runs.append(r)
        with open(args.out, "a") as f:
            f.write(json.dumps(r) + "\n")
        counts: dict = {}
        for verdict, _ in r["variants"].values():
            counts[verdict] = counts.get(verdict, 0) + 1
        print(f"busy {busy}: {r['wall_s']} s wall, {r['cpu_s']} s CPU, exit {r['exit']}, {counts}", flush=True)
    same = all(r["variants"] == runs[0]["variants"] for r in runs)
    print(f"{len(runs)} runs, {len(runs[0]['variants'])} variants: verdicts and proofs "
          f"{'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
