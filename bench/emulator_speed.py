"""Emulator speed on one CPU core, before and after in the same run: registry variants launched at
seeded inputs (the lm_head gemv of a model with the real Qwen3 vocabulary, RMSNorms, SiLU-mul, decode
attention; launches of one batch of blocks and of several) by this checkout's emulator and by the
emulator of an earlier commit (git show REV, loaded under another package name); minimum CPU time of
several launches each, and the outputs and launch counters (steps, thread-instructions, cost) of the
two compared bit for bit. --check-registry also compares every registry variant at its small test
shapes.

    python bench/emulator_speed.py [--before REV] [--out bench/results/emulator_speed.txt] [--check-registry]
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "01a7f52"           # main before the emulator's fast paths (issue 26, item 5)
CASES = [                    # (name, variant, dims, runs of the new emulator, runs of the old)
    ("lm_head gemv 151936 x 128 (vocab x hidden of a small Qwen3-vocabulary model)", "gemv_bf16_safe",
     {"N": 151936, "K": 128}, 3, 1),
    ("lm_head gemv 151936 x 1024 (Qwen3-0.6B)", "gemv_bf16_safe", {"N": 151936, "K": 1024}, 1, 1),
    ("gemv 4096 x 1024 (Qwen3-0.6B qkv)", "gemv_bf16_safe", {"N": 4096, "K": 1024}, 3, 2),
    ("rms_norm [32, 2560]", "rms_norm_bf16_safe", {"T": 32, "H": 2560}, 5, 3),
    ("rms_norm [1024, 2560] (10 batches)", "rms_norm_bf16_safe", {"T": 1024, "H": 2560}, 3, 1),
    ("add_rms_norm [1024, 1024] (4 batches)", "add_rms_norm_bf16_safe", {"T": 1024, "H": 1024}, 3, 1),
    ("silu_mul [64, 6144] (3 batches)", "silu_mul_bf16_safe", {"T": 64, "I": 6144}, 3, 1),
    ("attention_decode Hq 16 Hkv 8 S 127 P 4", "attention_decode_bf16_safe", {"Hq": 16, "Hkv": 8, "S": 127, "P": 4},
     5, 3),
    ("attention_decode Hq 16 Hkv 8 S 2048 P 33 (2 batches)", "attention_decode_bf16_safe",
     {"Hq": 16, "Hkv": 8, "S": 2048, "P": 33}, 3, 1),
]


def load_before(rev: str):
    """The machine module of checker/emulator at git revision rev, as package _emu_before."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", rev, "checker/emulator/"],
                           check=True, capture_output=True, text=True).stdout.split()
    tmp = Path(tempfile.mkdtemp(prefix="emu_before_"))
    (tmp / "_emu_before").mkdir()
    for name in names:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{name}"], check=True, capture_output=True,
                              text=True).stdout
        (tmp / "_emu_before" / Path(name).name).write_text(text.replace("kreg.checker.emulator", "_emu_before"))
    sys.path.insert(0, str(tmp))
    return importlib.import_module("_emu_before.machine")


class Setup:
    """One variant at one shape: its parsed PTX, launches and seeded input bytes."""

    def __init__(self, name: str, dims: dict):
        from kreg.checker.ptx.bind import bind, buffer_sizes
        from kreg.checker.ptx.compile import compile_cuda
        from kreg.conformance.dtypes import encode
        from kreg.registry.catalog import load_catalog
        from kreg.runtime import parsed
        cat = load_catalog()
        entry = next(e for e in cat.kernels if e.name == name)
        v, op = entry.variant, cat.ops[entry.op]
        self.module = parsed(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
        rng = np.random.default_rng(0)
        self.sizes, self.data = buffer_sizes(v, op, dims), {}
        for pname in self.sizes:
            p = op.params.get(pname)
            if p is not None and p.role == "in":
                if p.values is not None:
                    host = rng.integers(int(p.values[0](dims)), int(p.values[1](dims)) + 1, size=op.shape(pname, dims))
                else:
                    host = rng.standard_normal(op.shape(pname, dims))
                self.data[pname] = encode(host, op.dtype_of(pname, v.types))
        self.launches = None             # bound at the first memory(): both emulators allocate alike
        self._bind = lambda p: bind(v, op, self.module, dims, p)

    def memory(self, E):
        mem, ptrs = E.Memory(), {}
        for pname, nbytes in self.sizes.items():
            ptrs[pname] = mem.alloc(nbytes, pname)
            mem.write(ptrs[pname], self.data[pname] if pname in self.data else np.full(nbytes, 0xFF, np.uint8))
        if self.launches is None:
            self.launches, self.ptrs = self._bind(ptrs), ptrs
        assert ptrs == self.ptrs, "the two emulators allocate differently"
        return mem, ptrs

    def run(self, E):
        """(CPU seconds, output bytes per buffer, counters) of one run of every launch."""
        mem, ptrs = self.memory(E)
        counters = []
        t = time.process_time()
        for bl in self.launches:
            r = E.launch(self.module, bl.entry, bl.grid, bl.block, bl.shared, bl.args, mem)
            counters.append((r.steps, r.thread_instructions, r.cost))
        dt = time.process_time() - t
        return dt, {n: mem.read(p, self.sizes[n]) for n, p in ptrs.items()}, counters


def compare_registry(E_new, E_old) -> list[str]:
    """Every registry variant at its small test shapes: outputs and counters of both emulators."""
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.emulated import ENTRIES, shapes
    lines = []
    for entry in ENTRIES:
        for dims in shapes(entry):
            s = Setup(entry.name, dims)
            try:
                _, out_new, c_new = s.run(E_new)
            except E_new.EmulatorError as e:
                out_new, c_new = str(e), None
            try:
                _, out_old, c_old = s.run(E_old)
            except E_old.EmulatorError as e:
                out_old, c_old = str(e), None
            same = out_new == out_old and c_new == c_old
            lines.append(f"{'identical' if same else 'DIFFERENT'}: {entry.name} {dims}")
            print(lines[-1], flush=True)
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "emulator_speed.txt")
    ap.add_argument("--before", default=BEFORE, help="git revision of the emulator to compare with")
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--check-registry", action="store_true")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})      # one core, as on CI
    from kreg.checker.emulator import machine as E_new
    E_old = load_before(args.before)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = git_head()
    lines = [(f"PTX emulator speed, one core: this checkout ({head}, {E_new.VERSION}) against {args.before} "
              f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
              f"{platform.python_version()}, NumPy {np.__version__}, {stamp})"),
             (f"load average (1 min) at the start: {os.getloadavg()[0]:.2f}; times are CPU seconds of the "
              "process (the minimum of the runs), so other work on the machine inflates them less than wall time"),
             ""]
    for name, variant, dims, runs_new, runs_old in CASES:
        if args.only and args.only not in name:
            continue
        s = Setup(variant, dims)
        new = [s.run(E_new) for _ in range(runs_new)]
        old = [s.run(E_old) for _ in range(runs_old)]
        same = all(r[1] == old[0][1] and r[2] == old[0][2] for r in new + old)
        t_new, t_old = min(r[0] for r in new), min(r[0] for r in old)
        steps, ti = sum(c[0] for c in new[0][2]), sum(c[1] for c in new[0][2])
        lines.append(f"{name} ({variant}): before {t_old:.3f} s (min of {runs_old}), after {t_new:.3f} s (min of "
                     f"{runs_new}): {t_old / t_new:.1f}x; {steps} issue steps, {ti / 1e6:.1f} M thread-instructions "
                     f"({ti / t_new / 1e6:.0f} M/s after); outputs and counters "
                     f"{'bit-identical' if same else 'DIFFERENT'}")
        print(lines[-1], flush=True)
    if args.check_registry:
        reg = compare_registry(E_new, E_old)
        bad = [x for x in reg if not x.startswith("identical")]
        lines += ["", (f"registry variants at their small test shapes: {len(reg) - len(bad)} of {len(reg)} "
                       "launches bit-identical (outputs and counters)"), *bad]
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


def git_head() -> str:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                       check=False)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "checker"], capture_output=True,
                           text=True, check=False).stdout.strip()
    return (r.stdout.strip() or "?") + ("+changes" if dirty else "")


if __name__ == "__main__":
    main()
