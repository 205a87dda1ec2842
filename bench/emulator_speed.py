"""Emulator speed on one CPU core: an RMSNorm launch over [32, 2560] bf16 (32 blocks of 256 threads),
median of several launches; prints and saves thread-instructions per second.

    python bench/emulator_speed.py [--out bench/results/emulator_speed.txt]
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "emulator_speed.txt")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})      # one core, as on CI
    from kreg.checker.emulator import machine as E
    from kreg.checker.emulator import fpround as F
    from kreg.checker.ptx import parse as P
    from kreg.checker.ptx.compile import compile_cuda
    text = compile_cuda((ROOT / "tests/corpus/rmsnorm_bf16.cu").read_text()).ptx
    t0 = time.perf_counter()
    module = P.parse(text)
    parse_s = time.perf_counter() - t0
    rows, cols = 32, 2560
    rng = np.random.default_rng(0)
    x = F.f32_to_bf16_rn(rng.standard_normal(rows * cols).astype(np.float32))
    w = F.f32_to_bf16_rn(rng.standard_normal(cols).astype(np.float32))
    times, res = [], None
    for _ in range(args.repeats):
        mem = E.Memory()
        px, pw, po = mem.alloc(x.nbytes, "x"), mem.alloc(w.nbytes, "w"), mem.alloc(x.nbytes, "y")
        mem.write(px, x)
        mem.write(pw, w)
        t = time.perf_counter()
        res = E.launch(module, "rmsnorm_bf16", rows, 256, 0,
                       [np.uint64(px), np.uint64(pw), np.uint64(po), np.int32(cols), np.float32(1e-6)], mem)
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"PTX emulator speed, RMSNorm [32, 2560] bf16, grid 32 x block 256, one core "
             f"({platform.processor() or platform.machine()}, Python {platform.python_version()}, "
             f"NumPy {np.__version__}, {stamp})",
             f"machine load average (1 min) during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
             f"parse: {parse_s * 1e3:.1f} ms",
             f"launch: median {med * 1e3:.1f} ms over {args.repeats} (min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f})",
             f"issue steps: {res.steps}, thread-instructions: {res.thread_instructions}",
             f"thread-instructions per second: {res.thread_instructions / med / 1e6:.1f} M",
             f"target <= 1 s: {'met' if med <= 1.0 else 'MISSED'}"]
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
