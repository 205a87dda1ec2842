"""Throughput of `kreg submit DIR --jobs 2` on the CPU: a folder of generated candidates (correct copies
and mutants of the small `hadd` kernel of tests/data/hostile/_common and of the registry's add_bf16), each
through the whole pipeline with proofs, then the same folder again (every candidate a duplicate,
answered from the store). Checks the accept/reject counts against what each mutation must give and
writes bench/results/submit_throughput.txt. The candidates: tests/helpers/submit_candidates.py.

usage: python bench/submit_throughput.py [--count 50] [--jobs 2]"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from helpers.submit_candidates import KINDS, ORDER, generate  # noqa: E402


def fresh_home(home: Path) -> None:
    shutil.copytree(ROOT / "tests/data/hostile/_common/kernels", home / "kernels")


def submit_folder(home: Path, folder: Path, jobs: int, ray: bool = False) -> tuple[float, dict]:
    env = dict(os.environ, KREG_HOME=str(home))
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "kreg.cli", "submit", str(folder), "--jobs", str(jobs), "--json"]
                       + (["--ray"] if ray else []), env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"kreg submit exited {r.returncode}:\n{r.stderr[-3000:]}")
    return wall, json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ray", action="store_true", help="also through a local Ray instance of --jobs CPUs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, folder = Path(tmp) / "home", Path(tmp) / "candidates"
        fresh_home(home)
        expected = generate(folder, args.count)
        wall, doc = submit_folder(home, folder, args.jobs)
        wall2, doc2 = submit_folder(home, folder, args.jobs)
        if args.ray:                          # a fresh store: every candidate verified again, as Ray tasks
            fresh_home(Path(tmp) / "home-ray")
            wall3, doc3 = submit_folder(Path(tmp) / "home-ray", folder, args.jobs, ray=True)
    got = {s["name"]: s["accepted"] for s in doc["submissions"]}
    wrong = sorted(n for n, ok in expected.items() if got.get(n) != ok)
    stages: dict[str, float] = {}
    for s in doc["submissions"]:
        for k, v in s["stage_seconds"].items():
            stages[k] = stages.get(k, 0.0) + v
    lines = [
        f"kreg submit DIR --jobs {args.jobs} --json on the CPU (proofs on), "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} (shared with other work)",
        f"candidates: {args.count}: " + ", ".join(f"{k} x{n}" for k, n in Counter(
            ORDER[i % len(ORDER)] for i in range(args.count)).items()),
        f"first pass: {wall:.1f} s wall, {60 * args.count / wall:.1f} candidates per minute; "
        f"accepted {doc['accepted']}, rejected {doc['rejected']} (expected "
        f"{sum(expected.values())} / {args.count - sum(expected.values())}); wrong: {', '.join(wrong) or 'none'}",
        "stage seconds summed over candidates: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(stages.items())),
        f"second pass (every candidate a duplicate, answered from the store): {wall2:.1f} s wall, "
        f"{60 * args.count / wall2:.1f} candidates per minute; from the store: "
        f"{sum(s['from_store'] for s in doc2['submissions'])} of {args.count}",
    ]
    if args.ray:
        got3 = {s["name"]: s["accepted"] for s in doc3["submissions"]}
        wrong += sorted(f"{n} (ray)" for n, ok in expected.items() if got3.get(n) != ok)
        lines.append(f"through a local Ray instance (--ray --jobs {args.jobs}, a fresh store, the Ray start "
                     f"included): {wall3:.1f} s wall, {60 * args.count / wall3:.1f} candidates per minute; accepted "
                     f"{doc3['accepted']}, rejected {doc3['rejected']}, same decisions: {got3 == got}")
    first = {}
    for s in doc["submissions"]:
        first.setdefault(s["name"].split("_", 1)[1], s["why"][0])
    for kind, (op, what, ok) in KINDS.items():
        lines.append(f"  {kind:13s} {op:5s} {'accept' if ok else 'reject'}  {what:45s} -> {first.get(kind, '-')}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = ROOT / "bench/results/submit_throughput.txt"
    out.write_text(text)
    if wrong:
        raise SystemExit(f"unexpected decisions: {wrong}")


if __name__ == "__main__":
    main()
