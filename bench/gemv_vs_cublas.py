"""GEMV at batch 1 on the Qwen3 decode projections: every registry gemv variant timed by the conformance
timing (conformance/speed.py: CUDA graph of launches over buffer sets past twice the L2) side by side
with cuBLAS through torch F.linear (the same rotation of weight copies, captured in a torch CUDA graph)
and the copy bandwidth, all in one process. Prints per case the TB/s of each and the ratio to cuBLAS, and
per model the layer's four projections (bytes summed over times summed); "best safe" / "best unsafe": the
fastest variant of that class at each shape (what a profile runs there: registry/profiles.py by_case),
and their ratio (the issue's "safe within 5% of unsafe"). Every variant whose kernels wait first is timed twice
(conformance/speed.py): as plain graph nodes (`us`) and as the engine's decode graph runs it, each launch
with programmatic dependent launch (`eng us`: its blocks are scheduled while the previous launch drains and
wait in griddepcontrol.wait before reading anything); the layer and "% of copy" lines give both. Ends
with the issue's criteria, each judged on the plain figure and on the engine's. Output saved as
bench/results/gemv_vs_cublas.txt.

    python3 bench/gemv_vs_cublas.py
"""
from __future__ import annotations

import datetime
import sys


from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import open_harness
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
from torch_peer import linear_us  # noqa: E402


def cublas_us(torch, N: int, K: int, dtype, l2_bytes: int, batches: int = 21) -> float:
    """Median microseconds of F.linear(x, W) over weight copies past twice the L2, in a CUDA graph."""
    return linear_us(torch, 1, N, K, dtype, l2_bytes, batches, per_min=64)


def main():
    import torch
    dev = open_harness("gpu")
    cat = load_catalog()
    op = cat.ops["gemv"]
    bw = copy_bandwidth(dev)
    variants = [e.variant for e in cat.entries if e.op == "gemv" and e.variant.types["DT"] == "bf16"]
    modules = {v.name: dev.load_variant(v, op, None if v.vendor else
                                        compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
               for v in variants}     # the vendor variant: cublasGemmEx through kreg.runtime.vendor
    print(f"# gemv bf16, batch 1: {dev.describe()}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  "
          f"copy {bw / 1e12:.2f} TB/s  torch {torch.__version__}")
    print(f"{'case':20s} {'N':>7s} {'K':>6s} {'cuBLAS us':>9s} {'TB/s':>5s}" +
          "".join(f" {v.name + ' us':>22s} {'TB/s':>5s} {'xcuBLAS':>7s} {'eng us':>6s}" for v in variants)
          + f" {'best safe us':>12s} {'xcuBLAS':>7s} {'best unsafe us':>14s} {'safe/unsafe':>11s}")
    rows: dict[str, tuple[int, dict, dict]] = {}      # case -> (bytes, plain us, engine us) by variant
    for name, dims in op.cases.items():
        if "ragged" in name:
            continue
        N, K = dims["N"], dims["K"]
        nbytes = op.traffic_bytes(dims, {"DT": "bf16"})
        ref = cublas_us(torch, N, K, torch.bfloat16, dev.l2_bytes)
        row = f"{name:20s} {N:7d} {K:6d} {ref:9.2f} {nbytes / ref / 1e6:5.2f}"
        times, engine = {"cuBLAS": ref}, {"cuBLAS": ref}
        for v in variants:
            r = time_case(dev, modules[v.name], v, op, dims, bw)
            t, e = times[v.name], engine[v.name] = r["median_us"], r["engine_us"]
            row += f" {t:22.2f} {nbytes / t / 1e6:5.2f} {ref / t:7.2f} {e:6.2f}"
        for d in (times, engine):
            d["best safe"] = min(d[v.name] for v in variants if v.safety == "safe")
            d["best unsafe"] = min(d[v.name] for v in variants if v.safety == "unsafe")
        safe, unsafe = times["best safe"], times["best unsafe"]
        row += f" {safe:12.2f} {ref / safe:7.2f} {unsafe:14.2f} {safe / unsafe:11.3f}"
        rows[name] = (nbytes, times, engine)
        print(row, flush=True)
    pct = lambda b, t: 100 * b / t / 1e6 / (bw / 1e12)      # noqa: E731  (bytes, us) -> % of copy
    for label, which in (("plain graph nodes", 1), ("as the engine runs them (PDL where the kernels wait first)", 2)):
        print(f"\n# one layer's four projections (qkv, o, gate_up, down), {label}: bytes summed / times summed, % of copy")
        for model in dict.fromkeys("-".join(n.split("-")[:2]) for n in rows):
            per = [(r[0], r[which]) for n, r in rows.items() if n.startswith(model + "-") and "lm-head" not in n]
            sums = {k: (sum(b for b, _ in per), sum(d[k] for _, d in per)) for k in per[0][1]}
            print(f"{model:12s} " + "  ".join(f"{k}: {b / t / 1e6:.2f} TB/s ({pct(b, t):.0f}%)"
                                             for k, (b, t) in sums.items()))
    print("\n# issue #12's gemv criteria on the Qwen3-4B and 8B shapes (best safe variant per shape)")
    for label, which in (("plain", 1), ("engine", 2)):
        big = {n: r for n, r in rows.items() if n.split("-")[1] in ("4b", "8b")}
        proj = {n: pct(r[0], r[which]["best safe"]) for n, r in big.items() if "lm-head" not in n}
        layers = {m: pct(sum(r[0] for n, r in big.items() if n.startswith(m) and "lm-head" not in n),
                         sum(r[which]["best safe"] for n, r in big.items() if n.startswith(m) and "lm-head" not in n))
                  for m in ("qwen3-4b", "qwen3-8b")}
        lm = {n: pct(r[0], r[which]["best safe"]) for n, r in big.items() if "lm-head" in n}
        low = min(proj, key=proj.get)
        print(f"{label:6s}: faster than cuBLAS on every shape: {all(r[which]['best safe'] < r[1]['cuBLAS'] for r in big.values())}"
              f"; layer % of copy {', '.join(f'{m} {p:.1f}%' for m, p in layers.items())} (>= 85%)"
              f"; lowest projection {low} {proj[low]:.1f}% (>= 80%)"
              f"; lm_head {', '.join(f'{n} {p:.1f}%' for n, p in lm.items())} (>= 93%)"
              f"; safe/unsafe worst {max(r[which]['best safe'] / r[which]['best unsafe'] for r in big.values()):.3f} (<= 1.05)")


if __name__ == "__main__":
    main()
