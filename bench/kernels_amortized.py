"""Kernel time without the host's launch overhead: for each variant's largest case (the one
bench/kernels_gpu.py times), CUDA events around ONE launch (as kernels_gpu.py does) and around a burst
of back-to-back launches (time / launches), buffers rotated past L2, inputs filled on the device; also
an empty kernel through the same path, and each entry's registers per thread. Writes
kernels_amortized.json / .txt to --out.

    python3 bench/kernels_amortized.py [--op OP ...] --out DIR
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from pathlib import Path

import numpy as np


def main() -> int:
    import cupy as cp

    from kreg.checker.compile import compile_cuda
    from kreg.conformance.dtypes import is_float
    from kreg.conformance.launch import GpuModule, bind, buffer_sizes, parsed
    from kreg.registry.catalog import load_catalog

    ap = argparse.ArgumentParser()
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--out", default=".")
    ap.add_argument("--burst", type=int, default=20)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    device = f"{props['name'].decode()} (driver {cp.cuda.runtime.driverGetVersion()})"
    lines = [f"kreg bench/kernels_amortized.py on {device}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"]

    def log(s=""):
        print(s, flush=True)
        lines.append(s)

    def one_launch(fn, reps):
        fn(0)
        cp.cuda.Device().synchronize()
        ts = []
        for i in range(reps):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(); fn(i); b.record(); b.synchronize()
            ts.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
        return float(np.median(ts))

    def burst(fn, reps, n):
        fn(0)
        cp.cuda.Device().synchronize()
        ts = []
        for r in range(reps):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            for i in range(n):
                fn(r * n + i)
            b.record(); b.synchronize()
            ts.append(cp.cuda.get_elapsed_time(a, b) * 1e-3 / n)
        return float(np.median(ts))

    n = 1 << 30
    src, dst = cp.empty(n, dtype=cp.uint8), cp.empty(n, dtype=cp.uint8)
    copy_bw = 2 * n / burst(lambda i: dst.__setitem__(slice(None), src), 5, 4)
    del src, dst
    nop = GpuModule(compile_cuda('extern "C" __global__ void nop(int n) {}', "nop.cu").ptx)
    from kreg.conformance.launch import BoundLaunch
    bl = BoundLaunch("nop", (1, 1, 1), (32, 1, 1), 0, (np.int32(0),))
    t1, tb = one_launch(lambda i: nop.launch(bl), 50), burst(lambda i: nop.launch(bl), 10, 50)
    log(f"device-to-device copy (burst): {copy_bw / 1e12:.3f} TB/s; empty kernel: one launch {t1 * 1e6:.1f} us, "
        f"in a burst {tb * 1e6:.1f} us")
    results = {"device": device, "date": lines[0], "copy_tb_per_s": copy_bw / 1e12,
               "empty_kernel_us": {"one_launch": t1 * 1e6, "burst": tb * 1e6}, "variants": []}
    cat = load_catalog()
    for e in [e for e in cat.entries if not args.op or e.op in args.op]:
        v, op = e.variant, cat.ops[e.op]
        try:
            c = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
            module, gm = parsed(c.ptx), GpuModule(c.ptx)
            big_name, big = max(op.cases.items(), key=lambda kv: op.traffic_bytes(kv[1], v.types))
            traffic = op.traffic_bytes(big, v.types)
            sizes = buffer_sizes(v, op, big)
            nsets = max(2, min(16, math.ceil(512e6 / max(sum(sizes.values()), 1))))
            sets, keep = [], []
            for _ in range(nsets):
                ptrs = {}
                for name, nbytes in sizes.items():
                    p = op.params.get(name)
                    buf = cp.empty(max(nbytes, 1), dtype=cp.uint8)
                    if p is not None and p.values is not None:
                        lo, hi = int(p.values[0](big)), int(p.values[1](big))
                        buf[:nbytes].view(cp.int32)[:] = cp.random.randint(lo, hi + 1, nbytes // 4, dtype=cp.int32)
                    elif p is not None and is_float(op.dtype_of(name, v.types)) and nbytes % 4 == 0:
                        x = cp.random.standard_normal(nbytes // 2, dtype=cp.float32)
                        if op.dtype_of(name, v.types) == "f16":
                            buf[:nbytes].view(cp.float16)[:] = x.astype(cp.float16)
                        else:    # bf16: the upper half of each f32 (truncated: values only need to be normal-ish)
                            buf[:nbytes].view(cp.uint16)[:] = (x.view(cp.uint32) >> 16).astype(cp.uint16)
                    else:
                        buf.fill(0)
                    keep.append(buf)
                    ptrs[name] = buf.data.ptr
                sets.append(bind(v, op, module, big, ptrs))
            fn = lambda i: [gm.launch(b) for b in sets[i % nsets]]     # noqa: E731
            t_one, t_burst = one_launch(fn, args.reps * 3), burst(fn, args.reps, args.burst)
            regs = [gm._mod.get_function(ln.entry).num_regs for ln in v.launches]
            rec = {"op": e.op, "name": v.name, "safety": v.safety, "types": v.types, "hash": e.hash, "case": big_name,
                   "bytes": traffic, "one_launch_us": t_one * 1e6, "burst_us": t_burst * 1e6, "regs": regs,
                   "pct_of_copy_one_launch": 100 * traffic / t_one / copy_bw,
                   "pct_of_copy_burst": 100 * traffic / t_burst / copy_bw}
            log(f"{e.op:14s} {v.name:26s} {v.safety:6s} regs {','.join(map(str, regs)):>4s} | {big_name}: one launch "
                f"{t_one * 1e6:7.1f} us {rec['pct_of_copy_one_launch']:5.1f}% | burst {t_burst * 1e6:7.1f} us "
                f"{rec['pct_of_copy_burst']:5.1f}% of copy")
            del sets, keep
        except Exception as x:      # report and go on
            rec = {"op": e.op, "name": v.name, "error": f"{type(x).__name__}: {x}"}
            log(f"{e.op}/{v.name}: {rec['error']}")
        results["variants"].append(rec)
        cp.get_default_memory_pool().free_all_blocks()
    log()
    ok = [r for r in results["variants"] if "burst_us" in r]
    for opname in sorted({r["op"] for r in ok}):
        rs = [r for r in ok if r["op"] == opname]
        best = min(rs, key=lambda r: r["burst_us"])
        log(f"{opname}: best {best['name']} {best['pct_of_copy_burst']:.1f}% of copy (burst)")
        for s in [r for r in rs if r["safety"] == "safe"]:
            sib = [u for u in rs if u["safety"] == "unsafe" and u["types"] == s["types"]]
            if sib:
                u = min(sib, key=lambda r: r["burst_us"])
                log(f"  safe {s['name']} / unsafe {u['name']}: time ratio {s['burst_us'] / u['burst_us']:.3f} (burst)")
    (out_dir / "kernels_amortized.json").write_text(json.dumps(results, indent=2))
    (out_dir / "kernels_amortized.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
