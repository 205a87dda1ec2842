"""GEMV at batch 1 on the Qwen3 decode projections: every registry gemv variant timed by the conformance
timing (conformance/speed.py: CUDA graph of launches over buffer sets past twice the L2) side by side
with cuBLAS through torch F.linear (the same rotation of weight copies, captured in a torch CUDA graph)
and the copy bandwidth, all in one process. Prints per case the TB/s of each and the ratio to cuBLAS, and
per model the layer's four projections (bytes summed over times summed); "best safe" / "best unsafe": the
fastest variant of that class at each shape (what a profile runs there: registry/profiles.py by_case),
and their ratio (the issue's "safe within 5% of unsafe"). Output saved as
bench/results/gemv_vs_cublas.txt.

    python3 bench/gemv_vs_cublas.py
"""
from __future__ import annotations

import datetime
import sys


from kreg.checker.compile import compile_cuda
from kreg.conformance.devices import open_device
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
from torch_peer import linear_us  # noqa: E402


def cublas_us(torch, N: int, K: int, dtype, l2_bytes: int, batches: int = 21) -> float:
    """Median microseconds of F.linear(x, W) over weight copies past twice the L2, in a CUDA graph."""
    return linear_us(torch, 1, N, K, dtype, l2_bytes, batches, per_min=64)


def main():
    import torch
    dev = open_device("gpu")
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
          "".join(f" {v.name + ' us':>22s} {'TB/s':>5s} {'xcuBLAS':>7s}" for v in variants)
          + f" {'best safe us':>12s} {'xcuBLAS':>7s} {'best unsafe us':>14s} {'safe/unsafe':>11s}")
    layer: dict[str, dict[str, tuple[int, float]]] = {}
    for name, dims in op.cases.items():
        if "ragged" in name:
            continue
        N, K = dims["N"], dims["K"]
        nbytes = op.traffic_bytes(dims, {"DT": "bf16"})
        ref = cublas_us(torch, N, K, torch.bfloat16, dev.l2_bytes)
        row = f"{name:20s} {N:7d} {K:6d} {ref:9.2f} {nbytes / ref / 1e6:5.2f}"
        times = {"cuBLAS": ref}
        for v in variants:
            t = times[v.name] = time_case(dev, modules[v.name], v, op, dims, bw)["median_us"]
            row += f" {t:22.2f} {nbytes / t / 1e6:5.2f} {ref / t:7.2f}"
        safe = times["best safe"] = min(times[v.name] for v in variants if v.safety == "safe")
        unsafe = times["best unsafe"] = min(times[v.name] for v in variants if v.safety == "unsafe")
        row += f" {safe:12.2f} {ref / safe:7.2f} {unsafe:14.2f} {safe / unsafe:11.3f}"
        if "lm-head" not in name:                   # a layer's projections: qwen3-4b-{qkv,o,gate-up,down}
            per = layer.setdefault("-".join(name.split("-")[:2]), {})
            for k, t in times.items():
                b, tt = per.get(k, (0, 0.0))
                per[k] = (b + nbytes, tt + t)
        print(row, flush=True)
    print("\n# one layer's four projections (qkv, o, gate_up, down): bytes summed / times summed, % of copy")
    for model, per in layer.items():
        print(f"{model:12s} " + "  ".join(f"{k}: {b / t / 1e6:.2f} TB/s ({100 * b / t / 1e6 / (bw / 1e12):.0f}%)"
                                         for k, (b, t) in per.items()))


if __name__ == "__main__":
    main()
