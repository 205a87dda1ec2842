"""Kernel-only time of the qk_norm_rope_kv, qk_norm_rope_prefill and argmax variants on the GPU: each
variant's launches at its op's largest case are captured REPS times into a CUDA graph and the graph is
replayed (no host launch overhead inside the timed region); bandwidth uses the bytes the kernels really
move (Op.traffic_bytes counts whole caches and tables, see the ops' docs). Writes kernB_kernel_time.txt/.json.

    python3 bench/kernB_kernel_time.py --out DIR
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

OPS = ("qk_norm_rope_kv", "qk_norm_rope_prefill", "argmax")
REPS = 20


def real_bytes(op: str, d: dict, elt: int) -> int:
    """Bytes read and written by one call (weights included, scratch partials of argmax ignored: < 0.1%)."""
    if op == "argmax":
        return d["B"] * d["V"] * elt + d["B"] * 4
    T = d.get("T", 1)
    heads = d["Hq"] + 2 * d["Hkv"]
    return (T * heads * 128 * elt                 # qkv read
            + T * d["Hq"] * 128 * elt             # q_out written
            + 2 * T * d["Hkv"] * 128 * elt        # k and v cache rows written
            + 2 * T * 64 * 4 + 2 * 128 * elt)     # cos/sin rows, norm weights


def main() -> int:
    import cupy as cp

    from kreg.checker.compile import compile_cuda
    from kreg.conformance.dtypes import encode, is_float
    from kreg.conformance.launch import GpuModule, bind, buffer_sizes, parsed
    from kreg.registry.catalog import load_catalog
    from kreg.registry.schema import DTYPES

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    device = f"{props['name'].decode()} (driver {cp.cuda.runtime.driverGetVersion()})"
    lines = [f"kreg bench/kernB_kernel_time.py on {device}, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
             f"CUDA graph of {REPS} calls per replay; median of 30 replays; bytes = what the kernels really move"]
    stream = cp.cuda.Stream(non_blocking=True)

    def graph_time(fn) -> float:
        with stream:
            fn()
            stream.synchronize()
            stream.begin_capture()
            for _ in range(REPS):
                fn()
            g = stream.end_capture()
            g.launch(stream)
            stream.synchronize()
            ts = []
            for _ in range(30):
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record(stream)
                g.launch(stream)
                b.record(stream)
                b.synchronize()
                ts.append(cp.cuda.get_elapsed_time(a, b) * 1e-3 / REPS)
        return float(np.median(ts))

    n = 1 << 30
    src, dst = cp.empty(n, cp.uint8), cp.empty(n, cp.uint8)
    try:
        # CuPy's copy kernel, as bench/kernels_gpu.py times it (a graph memcpy node is slower: 2.43 TB/s)
        t_copy = graph_time(lambda: dst.__setitem__(slice(None), src))
        how = "graph of CuPy copy kernels"
    except Exception as x:          # no capture of memcpy: time plain copies instead
        print(f"copy in a graph failed ({x}); timing plain copies", flush=True)
        a, b = cp.cuda.Event(), cp.cuda.Event()
        dst[:] = src
        a.record()
        for _ in range(10):
            dst[:] = src
        b.record()
        b.synchronize()
        t_copy, how = cp.cuda.get_elapsed_time(a, b) * 1e-3 / 10, "10 back-to-back copies"
    copy_bw = 2 * n / t_copy
    del src, dst
    lines.append(f"device-to-device copy ({how}, 1 GiB): {copy_bw / 1e12:.3f} TB/s")
    print(lines[-1], flush=True)
    cat = load_catalog()
    rng = np.random.default_rng(0)
    results = []

    def time_variant(e, v, op, name, dims):
            c = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
            gm = GpuModule(c.ptx)
            bufs = {}
            for pname, nbytes in buffer_sizes(v, op, dims).items():
                p = op.params.get(pname)
                buf = cp.zeros(max(nbytes, 1), cp.uint8)
                if p is not None and p.role != "out":
                    dt = op.dtype_of(pname, v.types)
                    shape = op.shape(pname, dims)
                    vals = (rng.integers(int(p.values[0](dims)), int(p.values[1](dims)) + 1, size=shape)
                            if p.values is not None else rng.standard_normal(shape) if is_float(dt) else np.zeros(shape))
                    buf[:nbytes] = cp.asarray(encode(vals, dt).view(np.uint8).ravel())
                bufs[pname] = buf
            bound = bind(v, op, parsed(c.ptx), dims, {k: b.data.ptr for k, b in bufs.items()})
            t = graph_time(lambda: [gm.launch(bl, stream=stream) for bl in bound])
            elt = DTYPES[v.types["DT"]][0]
            nbytes = real_bytes(e.op, dims, elt)
            rec = {"op": e.op, "name": v.name, "safety": v.safety, "case": name, "dims": dims, "us": t * 1e6,
                   "real_bytes": nbytes, "tb_per_s": nbytes / t / 1e12, "pct_of_copy_bw": 100 * nbytes / t / copy_bw}
            del bufs
            return rec

    for e in cat.entries:
        if e.op not in OPS:
            continue
        v, op = e.variant, cat.ops[e.op]
        name, dims = max(op.cases.items(), key=lambda kv: op.traffic_bytes(kv[1], v.types))
        if e.op == "qk_norm_rope_kv":
            name, dims = "qwen3-32b-decode", op.cases["qwen3-32b-decode"]
        try:
            rec = time_variant(e, v, op, name, dims)
        except Exception as x:      # report and go on
            lines.append(f"{e.op:22s} {v.name:32s} FAILED: {type(x).__name__}: {x}")
            continue
        results.append(rec)
        print(f"{v.name}: {rec['us']:.2f} us", flush=True)
        lines.append(f"{e.op:22s} {v.name:32s} {v.safety:6s} {name:20s} {rec['us']:8.2f} us  {rec['real_bytes'] / 1e6:8.2f} MB  "
                     f"{rec['tb_per_s']:.2f} TB/s {rec['pct_of_copy_bw']:5.1f}% of copy")
    for opname in OPS:
        for dt in ("bf16", "f16"):
            s = [r for r in results if r["op"] == opname and r["safety"] == "safe" and f"_{dt}_" in r["name"]]
            u = [r for r in results if r["op"] == opname and r["safety"] == "unsafe" and f"_{dt}_" in r["name"]]
            if s and u:
                lines.append(f"{opname} {dt}: safe/unsafe kernel time ratio {s[0]['us'] / u[0]['us']:.3f}")
    print("\n".join(lines))
    (out / "kernB_kernel_time.txt").write_text("\n".join(lines) + "\n")
    (out / "kernB_kernel_time.json").write_text(json.dumps({"device": device, "copy_tb_per_s": copy_bw / 1e12,
                                                            "date": lines[0], "variants": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
