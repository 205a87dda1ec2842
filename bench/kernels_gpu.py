"""Run registry variants on the GPU: every named case against the float64 reference, and the largest
case timed (CUDA events, median of many launches, buffers rotated past L2) against the copy bandwidth
measured in the same run; prints a table and writes kernels_gpu.json / .txt to --out.

    python3 bench/kernels_gpu.py [--op OP ...] [--variant NAME ...] --out DIR
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
    from kreg.conformance.dtypes import decode, encode, is_float, storage
    from kreg.conformance.launch import GpuModule, bind, buffer_sizes, parsed
    from kreg.conformance.references import REFERENCES
    from kreg.conformance.speed import ROOFLINE_SLACK
    from kreg.registry.catalog import load_catalog

    ap = argparse.ArgumentParser()
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--out", default=".")
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    device = f"{props['name'].decode()} (driver {cp.cuda.runtime.driverGetVersion()})"
    lines = [f"kreg bench/kernels_gpu.py on {device}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"]

    def log(s=""):
        print(s, flush=True)
        lines.append(s)

    def timed(fn, iters):
        for _ in range(3):
            fn(0)
        cp.cuda.Device().synchronize()
        ts = []
        for i in range(iters):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fn(i)
            b.record()
            b.synchronize()
            ts.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
        return float(np.median(ts)), float(np.percentile(ts, 90) - np.percentile(ts, 10))

    # copy bandwidth (bytes read + written), measured now, in this process
    n = 1 << 30
    src, dst = cp.empty(n, dtype=cp.uint8), cp.empty(n, dtype=cp.uint8)
    t_copy, _ = timed(lambda i: dst.__setitem__(slice(None), src), 20)
    copy_bw = 2 * n / t_copy
    del src, dst
    log(f"device-to-device copy: {copy_bw / 1e12:.3f} TB/s")

    cat = load_catalog()
    for e in cat.errors:
        log(f"skipped: {e}")
    entries = [e for e in cat.entries if (not args.op or e.op in args.op) and (not args.variant or e.name in args.variant)]
    rng = np.random.default_rng(0)
    results = []

    def make_inputs(op, v, dims):
        host = {}
        for p in op.params.values():
            if p.role in ("out",) or (p.role == "scalar" and not p.shape):
                continue
            shape = op.shape(p.name, dims)
            dt = op.dtype_of(p.name, v.types)
            if p.values is not None:
                lo, hi = int(p.values[0](dims)), int(p.values[1](dims))
                host[p.name] = rng.integers(lo, hi + 1, size=shape)
            elif is_float(dt):
                host[p.name] = rng.standard_normal(shape)
            else:
                host[p.name] = rng.integers(0, 100, size=shape)
        return host

    def run_case(v, op, module, gm, dims):
        sizes = buffer_sizes(v, op, dims)
        host = make_inputs(op, v, dims)
        dev_bufs, ptrs = {}, {}
        for name, nbytes in sizes.items():
            buf = cp.full(max(nbytes, 1), 0xFF, dtype=cp.uint8)      # poison: NaN bit patterns
            if name in host:
                dt = op.dtype_of(name, v.types)
                buf[:nbytes] = cp.asarray(encode(host[name], dt).view(np.uint8).ravel())
            dev_bufs[name], ptrs[name] = buf, buf.data.ptr
        bound = bind(v, op, module, dims, ptrs)
        for bl in bound:
            gm.launch(bl)
        cp.cuda.Device().synchronize()
        exact_in = {k: decode(encode(x, op.dtype_of(k, v.types)), op.dtype_of(k, v.types)) for k, x in host.items()}
        scal = {p.name: p.default for p in op.params.values() if p.role == "scalar" and not p.shape}
        want = REFERENCES[op.reference](**exact_in, **dims, **scal)
        worst = 0.0
        ok = True
        for name, ref in want.items():
            dt = op.dtype_of(name, v.types)
            got = decode(cp.asnumpy(dev_bufs[name][:sizes[name]]).view(storage(dt)).reshape(op.shape(name, dims)), dt)
            if is_float(dt):
                tol = op.tolerance[dt]
                err = np.abs(got - ref)
                bound_ = tol["atol"] + tol["rtol"] * np.abs(ref)
                bad = ~(err <= bound_)
                ratio = float(np.nanmax(np.where(bound_ > 0, err / np.maximum(bound_, 1e-300), err))) if err.size else 0.0
                worst = max(worst, ratio if np.isfinite(ratio) else math.inf)
                ok &= not bad.any()
            else:
                ok &= bool(np.array_equal(got, ref))
        return ok, worst, bound, dev_bufs, ptrs, sizes

    for e in entries:
        v, op = e.variant, cat.ops[e.op]
        try:
            c = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
            module, gm = parsed(c.ptx), GpuModule(c.ptx)
        except Exception as x:    # report and go on with the next variant
            log(f"{e.op}/{v.name}: FAILED to load: {x}")
            results.append({"op": e.op, "name": v.name, "error": str(x)})
            continue
        rec = {"op": e.op, "name": v.name, "safety": v.safety, "types": v.types, "hash": e.hash, "ptx_sha256": c.sha256, "cases": {}}
        for cname, dims in op.cases.items():
            try:
                ok, worst, *_ = run_case(v, op, module, gm, dims)
                rec["cases"][cname] = {"pass": bool(ok), "worst_err_over_tol": worst}
            except Exception as x:
                rec["cases"][cname] = {"pass": False, "error": f"{type(x).__name__}: {x}"}
        # time the case that moves the most bytes
        big_name, big = max(op.cases.items(), key=lambda kv: op.traffic_bytes(kv[1], v.types))
        traffic = op.traffic_bytes(big, v.types)
        try:
            nsets = max(1, min(16, math.ceil(256e6 / max(traffic, 1))))
            sets = [run_case(v, op, module, gm, big) for _ in range(nsets)]   # each keeps its buffers alive
            t, spread = timed(lambda i: [gm.launch(bl) for bl in sets[i % nsets][2]], args.iters)
            del sets
            bw = traffic / t
            rec["speed"] = {"case": big_name, "median_us": t * 1e6, "spread_us": spread * 1e6, "bytes": traffic,
                            "tb_per_s": bw / 1e12, "pct_of_copy_bw": 100 * bw / copy_bw, "rotated_sets": nsets,
                            "above_roofline": bool(bw > ROOFLINE_SLACK * copy_bw)}
        except Exception as x:
            rec["speed"] = {"error": f"{type(x).__name__}: {x}"}
        results.append(rec)
        npass = sum(c.get("pass", False) for c in rec["cases"].values())
        sp = rec["speed"]
        speed = (f"{sp['median_us']:9.1f} us {sp['tb_per_s']:.2f} TB/s {sp['pct_of_copy_bw']:5.1f}% of copy"
                 + ("  ABOVE ROOFLINE: broken kernel or measurement" if sp["above_roofline"] else "")
                 if "median_us" in sp else sp.get("error", ""))
        log(f"{e.op:22s} {v.name:28s} {v.safety:6s} cases {npass}/{len(rec['cases'])} pass | {big_name}: {speed}")
        for cname, cr in rec["cases"].items():
            if not cr.get("pass"):
                log(f"    FAIL {cname}: {cr.get('error') or 'worst error/tolerance = %.3g' % cr['worst_err_over_tol']}")
    # safe / unsafe ratios per op
    log()
    for opname in sorted({r["op"] for r in results}):
        rs = [r for r in results if r["op"] == opname and "median_us" in r.get("speed", {})]
        safe = [r for r in rs if r["safety"] == "safe"]
        unsafe = [r for r in rs if r["safety"] == "unsafe"]
        best = min(rs, key=lambda r: r["speed"]["median_us"], default=None)
        if best:
            log(f"{opname}: best {best['name']} {best['speed']['pct_of_copy_bw']:.1f}% of copy bandwidth")
        for s in safe:
            sib = [u for u in unsafe if u["types"] == s["types"]]
            if sib:
                u = min(sib, key=lambda r: r["speed"]["median_us"])
                log(f"  safe {s['name']} / unsafe {u['name']}: time ratio {s['speed']['median_us'] / u['speed']['median_us']:.3f}")
    (out_dir / "kernels_gpu.json").write_text(json.dumps({"device": device, "copy_tb_per_s": copy_bw / 1e12,
                                                           "date": lines[0], "variants": results}, indent=2))
    (out_dir / "kernels_gpu.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
