"""The safe GEMV's compile-time knobs (kernels/safe/gemv/gemv.cu: GEMV_SLICES warps splitting K, GEMV_ROWS
rows per warp, GEMV_GROUPS row groups per block, GEMV_UNROLL of the K loop) swept on the GPU: each
configuration compiled with its -D options and matching launch geometry, checked by the conformance
numerics on two cases, then timed by the conformance timing on the Qwen3 decode shapes beside cuBLAS
(torch F.linear) and the copy bandwidth, in one process. Picks nothing: the table says which is fastest
over a layer and on every shape; the registry's variant changes only with a new proof.

    python3 bench/gemv_sweep.py [OUT.txt]
"""
from __future__ import annotations

import datetime
import sys
from dataclasses import replace

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import open_harness
from kreg.conformance.numerics import run_numerics
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog
from kreg.registry.expr import parse

CONFIGS = [  # (slices, rows, groups, unroll)
    (4, 2, 2, 1), (4, 2, 2, 2), (2, 2, 4, 1), (2, 2, 4, 2), (2, 4, 2, 1), (2, 4, 2, 2), (2, 2, 2, 1),
    (4, 4, 1, 1), (4, 4, 2, 1), (8, 2, 1, 1), (5, 2, 2, 1), (2, 1, 4, 2), (1, 4, 4, 2), (4, 1, 2, 2),
]
SHAPES = ["qwen3-4b-qkv", "qwen3-4b-o", "qwen3-4b-gate-up", "qwen3-4b-down", "qwen3-4b-lm-head",
          "qwen3-8b-qkv", "qwen3-8b-o", "qwen3-8b-gate-up", "qwen3-8b-down", "qwen3-0.6b-qkv", "qwen3-0.6b-o",
          "qwen3-0.6b-gate-up", "qwen3-0.6b-down"]


def configured(v, slices, rows, groups, unroll, dim="N"):
    """A kreg_gemv.cuh variant with these knobs and its launch geometry (dim: the op's row count)."""
    opts = v.options + (f"-DGEMV_SLICES={slices}", f"-DGEMV_ROWS={rows}", f"-DGEMV_GROUPS={groups}",
                        f"-DGEMV_UNROLL={unroll}")
    ln = replace(v.launches[0], grid=(parse(f"cdiv({dim}, {groups * rows})"),), block=(parse(32 * groups * slices),))
    return replace(v, options=opts, launches=(ln,), name=f"s{slices}r{rows}g{groups}u{unroll}")


def main(out_path: str | None = None) -> None:
    import torch
    sys.path.insert(0, "bench")
    from gemv_vs_cublas import cublas_us
    dev = open_harness("gpu")
    cat = load_catalog()
    op, base = cat.ops["gemv"], cat.find("gemv_bf16_safe").variant
    unsafe = cat.find("gemv_bf16_rows4").variant
    bw = copy_bandwidth(dev)
    lines = [f"# gemv bf16 sweep of the safe kernel's knobs: {dev.describe()}  "
             f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  copy {bw / 1e12:.2f} TB/s"]
    cols = {"cuBLAS": None}
    variants = {c: configured(base, *c) for c in CONFIGS} | {"unsafe rows4": unsafe}
    mods = {}
    for key, v in variants.items():
        mod = dev.load(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
        num = run_numerics(dev, mod.ptx, v, op,
                           {k: op.cases[k] for k in ("ragged-n37-k1000", "qwen3-4b-qkv")})
        if num.status != "pass":
            lines.append(f"{v.name}: numerics {num.status}: {num.failures()[:2]}")
            continue
        mods[key] = (v, mod)
    print("\n".join(lines), flush=True)
    times: dict[str, dict] = {}
    for shape in SHAPES:
        dims = op.cases[shape]
        nbytes = op.traffic_bytes(dims, {"DT": "bf16"})
        row = {"cuBLAS": cublas_us(torch, dims["N"], dims["K"], torch.bfloat16, dev.l2_bytes)}
        for key, (v, mod) in mods.items():
            row[v.name] = time_case(dev, mod, v, op, dims, bw)["median_us"]
        times[shape] = (nbytes, row)
        best = min((t, n) for n, t in row.items() if n != "cuBLAS" and n != unsafe.name)
        msg = (f"{shape:20s} cuBLAS {row['cuBLAS']:7.2f} us; best safe {best[1]} {best[0]:7.2f} us "
               f"({row['cuBLAS'] / best[0]:.2f}x cuBLAS, {100 * nbytes / best[0] / 1e6 / (bw / 1e12):.0f}% copy); "
               + " ".join(f"{n}={t:.2f}" for n, t in row.items()))
        print(msg, flush=True)
        lines.append(msg)
    names = [n for n in next(iter(times.values()))[1]]
    lines.append("\n# per configuration: layer % of copy (4B, 8B: qkv+o+gate_up+down bytes / time), worst "
                 "ratio to cuBLAS over 4B/8B shapes, worst % of copy over 4B/8B projections")
    for n in names:
        row = []
        for model in ("qwen3-4b", "qwen3-8b", "qwen3-0.6b"):
            parts = [times[f"{model}-{p}"] for p in ("qkv", "o", "gate-up", "down")]
            b, t = sum(p[0] for p in parts), sum(p[1][n] for p in parts)
            row.append(f"{model} {100 * b / t / 1e6 / (bw / 1e12):.0f}%")
        big = [s for s in SHAPES if "0.6b" not in s]
        worst = min(times[s][1]["cuBLAS"] / times[s][1][n] for s in big)
        worst_pct = min(100 * times[s][0] / times[s][1][n] / 1e6 / (bw / 1e12) for s in big if "lm-head" not in s)
        lines.append(f"{n:16s} " + "  ".join(row) + f"  worst x cuBLAS {worst:.2f}  worst projection {worst_pct:.0f}%"
                     f"  lm_head {100 * times['qwen3-4b-lm-head'][0] / times['qwen3-4b-lm-head'][1][n] / 1e6 / (bw / 1e12):.0f}%")
    text = "\n".join(lines) + "\n"
    print(text)
    if out_path:
        open(out_path, "w").write(text)


if __name__ == "__main__":
    main(*sys.argv[1:])
