"""The wgprove helper's device checks of the safe wgmma GEMM (kernels/safe/gemm/gemm_wgmma_safe.cu;
bench/dev_wgprove.sh runs both modes, each in its own process):

    python3 bench/wgs_dev.py numerics   # conformance numerics (all checks, the op's tolerance) of each
                                        # configuration at the ragged cases, 4B qkv at T = 17, 4B o, 8B down
    python3 bench/wgs_dev.py speed      # 4B layer at T = 2048: cuBLAS (torch) against each configuration
                                        # (BN, blocks per SM) and the unsafe gemm_wgmma, per shape and summed
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

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
from torch_peer import linear_us  # noqa: E402

LAYER = ("qwen3-4b-qkv", "qwen3-4b-o", "qwen3-4b-gate-up", "qwen3-4b-down")
# (BN, blocks per SM[, cp.async stages]): register-staged pairs of stages, or KREG_ASYNC with that many stages
CONFIGS = ((160, 1), (160, 1, -3), (192, 1, -3), (128, 1, -3), (256, 1, -3), (160, 1, 4), (256, 1, 3))
NUMERICS = CONFIGS[1:5]                     # the candidates for registration


def wgs_config(v, bn: int, minb: int = 1, stages: int = 0):
    """gemm_wgs at block tile 128 x bn, at least minb blocks an SM (__launch_bounds__): two register-staged
    stages (stages -1: KREG_DEEP, loads two steps ahead), or (stages > 0) KREG_ASYNC with that many cp.async
    stages, each (128 + bn) 128 bytes, + 1 KiB; the ragged launch unchanged."""
    opts = tuple(o for o in v.options if not o.startswith(("-DKREG_BN", "-DKREG_MINB", "-DKREG_ASYNC", "-DKREG_STAGES",
                                                           "-DKREG_DEEP", "-DKREG_PIPE", "-DKREG_TRI", "-DKREG_RS")))
    opts += (f"-DKREG_BN={bn}", f"-DKREG_MINB={minb}")
    if stages == -1:
        opts += ("-DKREG_DEEP=1",)
    elif stages == -3:
        opts += ("-DKREG_DEEP=0", "-DKREG_TRI=1")
    elif stages:
        opts += ("-DKREG_ASYNC=1", f"-DKREG_STAGES={stages}")
    ln = replace(v.launches[0], grid=(parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")),
                 shared=parse(str((3 if stages == -3 else max(stages, 2)) * (128 + bn) * 128 + 1024)))
    return replace(v, options=opts, launches=(ln,) + tuple(v.launches[1:]),
                   name=f"wgs_bn{bn}_b{minb}" + {-1: "_deep", -3: "_tri", 0: ""}.get(stages, f"_cp{stages}"))


def ptx_of(v):
    return None if v.vendor else compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


def numerics() -> None:
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device("gpu")
    print(f"# gemm_wgs numerics under the accumulation tolerance: {dev.describe()}  "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    cases = {k: d for k, d in op.cases.items() if k.startswith("ragged")}
    cases |= {k: op.cases[k] for k in ("qwen3-4b-qkv-t17", "qwen3-4b-o", "qwen3-8b-down")}
    base = {d: cat.find(f"gemm_wgs_{d}_safe").variant for d in ("bf16", "f16")}
    plan = [wgs_config(base["bf16"], *c) for c in NUMERICS] + [wgs_config(base["f16"], *c) for c in NUMERICS[:3]]
    for v in plan:
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
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device("gpu")
    bw = copy_bandwidth(dev)
    print(f"# gemm {dt} speed, Qwen3-4B layer at T = 2048: {dev.describe()}  "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  copy {bw / 1e12:.2f} TB/s  torch {torch.__version__}",
          flush=True)
    wgs = cat.find(f"gemm_wgs_{dt}_safe").variant
    variants = [wgs] + [wgs_config(wgs, *c) for c in CONFIGS[1:]] + [cat.find(f"gemm_wgmma_{dt}").variant]
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
                print(f"  {name:22s} {t:8.1f}us {flops / t / 1e6:5.0f}TF {row['cuBLAS'] / t:.2f}x", flush=True)
            except Exception as e:
                print(f"  {name} at {case}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        for k, t in row.items():
            f, tt = tot.get(k, [0, 0.0])
            tot[k] = [f + flops, tt + t]
    print("# layer (flops summed / times summed)")
    ref = tot["cuBLAS"][1]
    for k, (f, t) in tot.items():
        print(f"{k:22s} {f / t / 1e6:7.1f} TFLOP/s  {100 * ref / t:5.1f}% of cuBLAS", flush=True)


if __name__ == "__main__":
    {"numerics": numerics, "speed": speed}[sys.argv[1]](*sys.argv[2:])
