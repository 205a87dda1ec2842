"""Host-side time of one numerics case (conformance.numerics.run_case) at the largest named case of each
op, with the device stubbed by host memory: its launch writes the rounded float64 reference of the
inputs it finds (so every check takes its passing path) and its own time is subtracted. Each op runs
in its own process (peak memory is per op). Prints and saves a table; the breakdown is cProfile's
cumulative time of the main steps.

    python bench/verify_host_time.py [--label after] [--ops add argmax ...] [--out bench/results/verify_host_time.txt]
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import multiprocessing as mp
import os
import platform
import pstats
import resource
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("make_inputs", "write_inputs", "reference", "check_outputs", "integrity", "unwritten", "output_bits")


def stub_device():
    from kreg.conformance.harness import Harness
    from kreg.conformance.dtypes import decode, encode, storage
    from kreg.runtime import parsed

    class HostHarness(Harness):
        """Buffers in host memory; reads copy (as a device-to-host copy does); a launch writes the
        rounded reference (set up by the bench), timed apart."""
        name, guard = "host-stub", 4096

        def __init__(self):
            self.next, self.case, self.stub_s, self.pending = 1 << 32, None, 0.0, False

        def _alloc(self, nbytes, name):
            self.next += -(-nbytes // 4096) * 4096 + 4096
            return np.empty(nbytes, np.uint8), self.next

        def _write(self, handle, offset, data):
            handle[offset:offset + data.size] = data

        def _read(self, handle):
            return handle.copy()

        def load(self, ptx):
            return parsed(ptx)

        def launch(self, module, bl):
            self.pending = True

        def sync(self):
            if not self.pending:
                return
            t = time.perf_counter()
            op, dtypes, dims, scalars, ref = self.case
            bufs = {b.name: b for b in self.buffers[-len(self.buffers_of_case):]}
            data = {n: decode(b.handle[b.guard:b.guard + b.nbytes].view(storage(dtypes[n])),
                              dtypes[n]).reshape(op.shape(n, dims))
                for n, b in bufs.items() if n in op.params and op.params[n].role in ("in", "inout")}
            for n, want in ref(**data, **dims, **scalars).items():
                b = bufs[n]
                b.handle[b.guard:b.guard + b.nbytes] = np.ascontiguousarray(encode(want, dtypes[n])).reshape(-1).view(np.uint8)
            self.pending = False
            self.stub_s += time.perf_counter() - t

    return HostHarness()


def largest_case(op, v):
    from kreg.conformance.shapes import footprint
    return max(op.cases.items(), key=lambda kv: footprint(op, v, kv[1]))


def measure_op(op_name: str, conn) -> None:
    from kreg.checker.ptx.compile import compile_cuda
    from kreg.conformance import numerics
    from kreg.conformance.inputs import host_scalars
    from kreg.checker.ptx.bind import buffer_sizes
    from kreg.conformance.references import REFERENCES
    from kreg.registry.catalog import load_catalog
    cat = load_catalog()
    entry = next(e for e in cat.entries if e.op == op_name)
    v, op = entry.variant, cat.ops[op_name]
    case, dims = largest_case(op, v)
    dev = stub_device()
    dev.buffers_of_case = buffer_sizes(v, op, dims)
    dev.case = (op, {n: op.dtype_of(n, v.types) if n in op.params else None for n in dev.buffers_of_case},
                dims, host_scalars(op), REFERENCES[op.reference])
    module = dev.load(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    res = numerics.run_case(dev, module, v, op, case, dims, np.random.default_rng([0, 0]))
    prof.disable()
    wall = time.perf_counter() - t
    stats = pstats.Stats(prof).stats
    steps = {s: sum(st[3] for (f, _, name), st in stats.items() if name == s and "conformance" in f) for s in STEPS}
    conn.send({"op": op_name, "variant": v.name, "case": case, "dims": dims, "pass": res.ok,
               "failures": res.failures[:3], "host_s": wall - dev.stub_s, "stub_s": dev.stub_s, "steps": steps,
               "bytes": sum(buffer_sizes(v, op, dims).values()),
               "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20})


def run_op(op_name: str) -> dict:
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=measure_op, args=(op_name, send))
    p.start()
    send.close()
    try:
        out = recv.recv()
    except EOFError:
        out = {"op": op_name, "error": f"the process died (exit {p.join() or p.exitcode}; out of memory?)"}
    p.join()
    return out


def main():
    from kreg.registry.catalog import load_catalog
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", nargs="*")
    ap.add_argument("--label", default="after")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "verify_host_time.txt")
    args = ap.parse_args()
    ops = args.ops or sorted(load_catalog().ops)
    head = (f"# {args.label}: host time of one numerics case (3 launches, all checks) at each op's largest named case, "
            f"device stubbed; {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}, {platform.node()}, "
            f"{os.cpu_count()} CPUs, numpy {np.__version__}")
    lines = [head, f"{'op':22s} {'case':20s} {'MB':>6s} {'host s':>7s} {'pass':>5s} {'peak GB':>7s}  "
             + " ".join(f"{s[:11]:>11s}" for s in STEPS)]
    print("\n".join(lines), flush=True)
    for name in ops:
        r = run_op(name)
        if "error" in r:
            line = f"{name:22s} {r['error']}"
        else:
            line = (f"{name:22s} {r['case']:20s} {r['bytes'] / 1e6:6.0f} {r['host_s']:7.2f} {str(r['pass']):>5s} "
                    f"{r['peak_rss_gb']:7.1f}  " + " ".join(f"{r['steps'][s]:11.2f}" for s in STEPS))
            if r["failures"]:
                line += "\n    " + "\n    ".join(r["failures"])
        print(line, flush=True)
        lines.append(line)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
