"""Causal prefill attention on the Qwen3-4B heads (Hq 32, Hkv 8, head_dim 128) at T = 2048 and 8192 from
position 0: every registry attention_prefill variant of the dtype, timed by the conformance timing
(conformance/speed.py: the exact PTX through kreg.runtime, a CUDA graph of launches over buffer sets past
twice the L2, median of batches), side by side with torch SDPA on its flash backend (is_causal, GQA by
enable_gqa or, where this torch lacks it, K/V repeated per query head beforehand), timed with CUDA events
(median), in one process. Prints per shape each time in us, TFLOP/s (causal flops, the op's `flops`) and
the ratios the targets name (variant / SDPA, safe / unsafe); writes the same text to the path given.

    python3 bench/attention_prefill_gpu.py RESULTS.txt [bf16|f16]
"""
from __future__ import annotations

import datetime
import sys

import numpy as np

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import open_harness
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog

SHAPES = {"qwen3-4b-t2048": {"T": 2048, "Hq": 32, "Hkv": 8, "S": 2048, "start": 0},
          "qwen3-4b-t8192": {"T": 8192, "Hq": 32, "Hkv": 8, "S": 8192, "start": 0}}


def sdpa_us(torch, dims: dict[str, int], dtype, batches: int = 21, per: int = 10) -> tuple[float, str]:
    """Median microseconds of one causal SDPA call on the flash backend, and how GQA was done."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    T, Hq, Hkv = dims["T"], dims["Hq"], dims["Hkv"]
    q = torch.randn(1, Hq, T, 128, device="cuda", dtype=dtype)
    k = torch.randn(1, Hkv, T, 128, device="cuda", dtype=dtype)
    v = torch.randn(1, Hkv, T, 128, device="cuda", dtype=dtype)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        try:
            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            call, how = (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)), \
                "enable_gqa"
        except (TypeError, RuntimeError):
            kr, vr = (x.repeat_interleave(Hq // Hkv, dim=1) for x in (k, v))
            call, how = (lambda: F.scaled_dot_product_attention(q, kr, vr, is_causal=True)), \
                "K/V repeated per query head (not timed)"
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        ts = []
        for _ in range(batches):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(per):
                call()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3 / per)
    return float(np.median(ts)), how


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "attention_prefill_gpu.txt"
    dt = sys.argv[2] if len(sys.argv) > 2 else "bf16"
    import torch
    dev = open_harness("gpu")
    cat = load_catalog()
    op = cat.ops["attention_prefill"]
    bw = copy_bandwidth(dev)
    variants = sorted((e.variant for e in cat.entries if e.op == "attention_prefill" and e.variant.types["DT"] == dt),
                      key=lambda v: (v.safety != "safe", v.name))
    modules = {v.name: dev.load(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
               for v in variants}
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
    lines = [f"# attention_prefill {dt}, Qwen3-4B heads (Hq 32, Hkv 8, d 128), causal, start 0: {dev.describe()}  "
             f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  torch {torch.__version__}"]

    def say(s):
        print(s, flush=True)
        lines.append(s)
    say(lines.pop())
    for name, dims in SHAPES.items():
        flops = int(op.flops(dims))
        ref, how = sdpa_us(torch, dims, tdt)
        say(f"\n{name}  T={dims['T']}  causal GFLOP {flops / 1e9:.1f}")
        say(f"  {'torch SDPA flash':34s} {ref:10.1f} us {flops / ref / 1e6:7.1f} TFLOP/s   ({how})")
        times = {}
        for v in variants:
            t = times[v.name] = time_case(dev, modules[v.name], v, op, dims, bw)["median_us"]
            say(f"  {v.name + ' (' + v.safety + ')':34s} {t:10.1f} us {flops / t / 1e6:7.1f} TFLOP/s   "
                f"x SDPA {t / ref:5.2f}")
        safe = [times[v.name] for v in variants if v.safety == "safe"]
        unsafe = [times[v.name] for v in variants if v.safety == "unsafe"]
        best = min(times.values())
        say(f"  ratios: safe / SDPA {min(safe) / ref:.2f} (target <= 2), best / SDPA {best / ref:.2f} "
            f"(target <= 1.25)" + (f", safe / unsafe {min(safe) / min(unsafe):.2f} (target <= 1.10)" if unsafe else ""))
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
