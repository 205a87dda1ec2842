"""The wgpipe helper's measurements (issue #12): which pipeline structure of a wgmma GEMM is the lever, and the
safe gemm_wgs (kernels/safe/gemm/gemm_wgmma_safe.cu) with wgmma.wait_group 1 every step. bench/dev_wgpipe.sh
runs each mode in its own process:

    python3 bench/wgs_pipe.py speed      # 4B layer at T = 2048, bf16: cuBLAS (torch), the registered safe and
                                         # unsafe variants, the unsafe gemm_wgmma with -D switches (wait_group 0,
                                         # fewer stages) and the safe KREG_PIPE / KREG_RS configurations
    python3 bench/wgs_pipe.py numerics [gpu|cpu]   # conformance numerics of the candidates (the ragged cases,
                                         # and on the GPU 4B qkv at T = 17, 4B o, 8B down)
"""
from __future__ import annotations

import datetime
import sys
import time
from dataclasses import replace

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.devices import open_device
from kreg.conformance.numerics import run_numerics
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog
from kreg.registry.expr import parse

LAYER = ("qwen3-4b-qkv", "qwen3-4b-o", "qwen3-4b-gate-up", "qwen3-4b-down")
SAFE_DROP = ("-DKREG_BN", "-DKREG_MINB", "-DKREG_ASYNC", "-DKREG_STAGES", "-DKREG_DEEP", "-DKREG_TRI", "-DKREG_PIPE",
             "-DKREG_RS", "-DKREG_MMA_FIRST")
# (name, BN, structure, stages[, extra -D]): safe gemm_wgs configurations (run1: pipe 3/4/5 stages at 160, 4 at 192
# and 256, rs; run2: the registered pipe 256 x 4 against 160 x 5 and the wgmmas issued before the copies)
SAFE = (("pipe_bn160_s5", 160, "pipe", 5), ("pipe_bn256_s4_mf", 256, "pipe", 4, "-DKREG_MMA_FIRST=1"),
        ("pipe_bn160_s5_mf", 160, "pipe", 5, "-DKREG_MMA_FIRST=1"), ("pipe_bn192_s4", 192, "pipe", 4),
        ("pipe_bn160_s4", 160, "pipe", 4), ("pipe_bn160_s3", 160, "pipe", 3), ("rs_bn160", 160, "rs", 3))
SPEED = ("pipe_bn160_s5", "pipe_bn256_s4_mf", "pipe_bn160_s5_mf", "pipe_bn192_s4")
# (name, BN, stages, wait_group 0): the unsafe gemm_wgmma (cp.async, rotating stage index, one barrier a step)
UNSAFE = (("wgmma_bn256_s4", 256, 4, False),)
NUMERICS = ("pipe_bn256_s4_mf",)


def safe_config(v, name, bn, kind, stages, *extra):
    opts = tuple(o for o in v.options if not o.startswith(SAFE_DROP)) + (f"-DKREG_BN={bn}",)
    opts += ("-DKREG_PIPE=1", f"-DKREG_STAGES={stages}") if kind == "pipe" else ("-DKREG_DEEP=0", "-DKREG_RS=1")
    opts += extra
    ln = replace(v.launches[0], grid=(parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")),
                 shared=parse(str(stages * (128 + bn) * 128 + 1024)))
    return replace(v, options=opts, launches=(ln,) + tuple(v.launches[1:]), name=name)


def unsafe_config(v, name, bn, stages, wait0):
    opts = tuple(o for o in v.options if not o.startswith(("-DKREG_BN", "-DKREG_STAGES")))
    opts += (f"-DKREG_BN={bn}", f"-DKREG_STAGES={stages}") + (("-DKREG_WAIT0=1",) if wait0 else ())
    ln = replace(v.launches[0], grid=(parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")),
                 shared=parse(str(stages * (128 + bn) * 128 + 1024)))
    return replace(v, options=opts, launches=(ln,) + tuple(v.launches[1:]), name=name)


def ptx_of(v):
    return None if v.vendor else compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


def plan(cat, dt="bf16", names=SPEED):
    wgs = cat.find(f"gemm_wgs_{dt}_safe").variant
    return [safe_config(wgs, f"{n}_{dt}", *c) for n, *c in SAFE if n in names]


def numerics(where: str = "gpu") -> None:
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device(where)
    print(f"# gemm_wgs pipeline numerics under the op's tolerance: {dev.describe()}  "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    cases = {k: d for k, d in op.cases.items() if k.startswith("ragged")}
    if where == "gpu":
        cases |= {k: op.cases[k] for k in ("qwen3-4b-qkv-t17", "qwen3-4b-o", "qwen3-8b-down")}
    vs = [cat.find(f"gemm_wgs_{dt}_safe").variant for dt in ("bf16", "f16")] + plan(cat, "bf16", NUMERICS)
    for v in vs:
        t0 = time.time()
        try:
            num = run_numerics(dev, ptx_of(v), v, op, cases)
        except Exception as e:
            print(f"{v.name}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        print(f"{v.name}: {num.status} ({time.time() - t0:.1f} s)", flush=True)
        for c in num.cases:
            w = c.outputs.get("Y", {})
            worst = (w.get("worst") or {}).get("err_over_tol")
            print(f"  {c.case:22s} {'pass' if c.ok else 'FAIL'}  max_abs_err {w.get('max_abs_err', float('nan')):.3g}"
                  f"  worst err/tol {worst if worst is None else round(worst, 4)}", flush=True)
        for f in num.failures()[:4]:
            print(f"  ! {f[:400]}", flush=True)


def speed(dt: str = "bf16") -> None:
    import torch
    sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
    from torch_peer import linear_us
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device("gpu")
    bw = copy_bandwidth(dev)
    print(f"# gemm {dt} speed, Qwen3-4B layer at T = 2048: {dev.describe()}  "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  copy {bw / 1e12:.2f} TB/s  torch {torch.__version__}",
          flush=True)
    wg = cat.find(f"gemm_wgmma_{dt}").variant
    variants = [cat.find(f"gemm_wgs_{dt}_safe").variant, wg] + [unsafe_config(wg, *c) for c in UNSAFE] + plan(cat, dt)
    mods = {}
    for v in variants:
        try:
            mods[v.name] = (v, dev.load_variant(v, op, ptx_of(v)))
        except Exception as e:     # a configuration past the shared memory or register limits
            print(f"{v.name}: not loaded: {type(e).__name__}: {str(e)[:200]}", flush=True)
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
    tot: dict[str, list[float]] = {}
    for case in LAYER:
        d = op.cases[case]
        flops = 2 * d["T"] * d["N"] * d["K"]
        row = {"cuBLAS": linear_us(torch, d["T"], d["N"], d["K"], tdt, dev.l2_bytes, 21)}
        print(f"{case:18s} cuBLAS {row['cuBLAS']:.1f}us {flops / row['cuBLAS'] / 1e6:.0f}TF", flush=True)
        for name, (v, m) in mods.items():
            try:
                t = row[name] = time_case(dev, m, v, op, d, bw)["median_us"]
                print(f"  {name:24s} {t:8.1f}us {flops / t / 1e6:5.0f}TF {row['cuBLAS'] / t:.2f}x", flush=True)
            except Exception as e:
                print(f"  {name} at {case}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        for k, t in row.items():
            f, tt = tot.get(k, [0, 0.0])
            tot[k] = [f + flops, tt + t]
    print("# layer (flops summed / times summed)")
    ref = tot["cuBLAS"][1]
    for k, (f, t) in tot.items():
        print(f"{k:24s} {f / t / 1e6:7.1f} TFLOP/s  {100 * ref / t:5.1f}% of cuBLAS", flush=True)


if __name__ == "__main__":
    {"numerics": numerics, "speed": speed}[sys.argv[1]](*sys.argv[2:])
