"""GEMM (prefill linear layers) on the GPU: every registry gemm variant of one dtype timed by the conformance
timing (conformance/speed.py: CUDA graph of launches over buffer sets past twice the L2, CUDA events,
median) side by side with cuBLAS through torch F.linear (the same rotation of weight copies, captured in a
torch CUDA graph, CUDA events, median), on the Qwen3-4B projections at T = 2048 and the 4B qkv projection
at T = 8192. Prints the device, per case the TFLOP/s of each and the ratio to cuBLAS, and per variant the
layer's four projections (flops summed over times summed); the same text is written to the path given.
Numerics are not checked here: `kreg verify --device gpu --op gemm` does that.

    python3 bench/gemm_gpu.py bench/results/gemm_gpu.txt [bf16|f16]
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

CASES = ("qwen3-4b-qkv", "qwen3-4b-o", "qwen3-4b-gate-up", "qwen3-4b-down", "qwen3-4b-qkv-t8192")
LAYER = CASES[:4]


def cublas_us(torch, T: int, N: int, K: int, dtype, l2_bytes: int, batches: int = 21) -> float:
    """Median microseconds of F.linear(X, W) over weight copies past twice the L2, in a CUDA graph."""
    return linear_us(torch, T, N, K, dtype, l2_bytes, batches)


def main(out_path: str, dt: str = "bf16", skip: str = ""):
    import torch
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    dev = open_harness("gpu")
    cat = load_catalog()
    op = cat.ops["gemm"]
    bw = copy_bandwidth(dev)
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
    variants = sorted((e.variant for e in cat.entries if e.op == "gemm" and e.variant.types["DT"] == dt),
                      key=lambda v: (v.safety, v.name))
    variants = [v for v in variants if v.name not in skip.split(",")]   # e.g. a variant that faults
    modules = {v.name: dev.load_variant(v, op, None if v.vendor else
                                        compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
               for v in variants}
    say(f"# gemm {dt}: {dev.describe()}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  "
        f"copy {bw / 1e12:.2f} TB/s  torch {torch.__version__}")
    say("# TFLOP/s = 2 T N K / median time; x = cuBLAS time / variant time (1.00 = as fast as cuBLAS)")
    say(f"{'case':20s} {'T':>5s} {'N':>6s} {'K':>5s} {'cuBLAS us':>10s} {'TF/s':>6s}" +
        "".join(f" {v.name + ' (' + v.safety + ') us':>34s} {'TF/s':>6s} {'x':>5s}" for v in variants))
    layer: dict[str, list[float]] = {}
    best: dict[str, list[float]] = {}     # per class, the fastest variant of each layer shape
    for name in CASES:
        dims = op.cases[name]
        T, N, K = dims["T"], dims["N"], dims["K"]
        flops = 2 * T * N * K
        ref = cublas_us(torch, T, N, K, tdt, dev.l2_bytes)
        row = f"{name:20s} {T:5d} {N:6d} {K:5d} {ref:10.1f} {flops / ref / 1e6:6.1f}"
        times = {"cuBLAS": ref}
        for v in variants:
            t = times[v.name] = time_case(dev, modules[v.name], v, op, dims, bw)["median_us"]
            row += f" {t:34.1f} {flops / t / 1e6:6.1f} {ref / t:5.2f}"
        if name in LAYER:
            for k, t in times.items():
                f, tt = layer.get(k, [0, 0.0])
                layer[k] = [f + flops, tt + t]
            for cls in ("safe", "unsafe"):
                got = [times[v.name] for v in variants if v.safety == cls]
                if got:
                    f, tt = best.get(cls, [0, 0.0])
                    best[cls] = [f + flops, tt + min(got)]
        say(row)
    say("\n# one Qwen3-4B layer's four projections at T = 2048 (flops summed / times summed)")
    ref_t = layer["cuBLAS"][1]
    for k, (f, t) in layer.items():
        safety = next((v.safety for v in variants if v.name == k), "vendor")
        say(f"{k:28s} {safety:7s} {f / t / 1e6:7.1f} TFLOP/s  {100 * ref_t / t:5.1f}% of cuBLAS")
    for cls, (f, t) in best.items():       # what a per-shape choice among the class's variants reaches
        say(f"{'best ' + cls + ' per shape':28s} {cls:7s} {f / t / 1e6:7.1f} TFLOP/s  {100 * ref_t / t:5.1f}% of cuBLAS")
    with open(out_path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], *sys.argv[2:4])
