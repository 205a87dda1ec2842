"""The gemm helper's device checks (bench/dev_gemm.sh runs both modes, each in its own process):

    python3 bench/gemm_dev.py numerics   # conformance numerics (all checks, the op's tolerance) of the
                                         # tensor-core variants and cuBLAS at ragged cases, a 4B case and
                                         # K = 12288 (8B down), with the worst error / tolerance per case
    python3 bench/gemm_dev.py speed      # 4B layer at T = 2048: cuBLAS (torch) vs the safe gemm_tc and
                                         # the unsafe gemm_mma_sw in a few tile / stage configurations
    python3 bench/gemm_dev.py numerics 3 / speed 3   # the third sweep's configurations (TCA_CONFIGS, SW3_CONFIGS)
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
SW_CONFIGS = ((256, 32, 4), (256, 64, 3), (128, 32, 4))
TC_CONFIGS = ((128, 32, 32, 1), (128, 32, 64), (128, 64, 32), (256, 64, 32))   # (BN, WN, BK[, two stages])
SWEEPS = {   # second sweep (after bench/results/gemm_dev_speed_2026-11-24.txt): around the best of each
    "2": (((128, 32, 3), (128, 32, 6), (128, 64, 3), (128, 64, 4), (256, 64, 4)),
          ((128, 32, 32), (128, 64, 64), (128, 64, 32, 1))),
}
# third sweep: gemm_tc with cp.async (KREG_ASYNC=1: (BN, WN, BK)) and gemm_mma_sw's warp-tile width and
# blocks per SM (BN, BK, STAGES, WN, MINB): 128 x 160 / 128 x 192 tiles make the N = 2560 shapes one wave
TCA_CONFIGS = ((128, 32, 64), (128, 32, 64, 2), (128, 64, 64), (128, 32, 32), (128, 64, 32), (256, 64, 32))
TC3_CONFIGS = ((128, 32, 64, 0, 2), (128, 32, 32, 0, 2), (256, 32, 32))   # the register-staged gemm_tc: 2 blocks an SM; 128 x 256 tiles of 16 warps
SW3_CONFIGS = ((128, 64, 3, 64, 2), (160, 64, 3, 80, 2), (192, 64, 3, 96, 1), (192, 32, 4, 96, 2),
               (64, 64, 3, 32, 2), (128, 32, 4, 64, 2))


def tc_config(v, bn: int, wn: int, bk: int, db: int = 0, minb: int = 1):
    """gemm_tc at block tile 128 x bn, warp tiles 64 x wn, k step bk, one or two shared stages (the
    ragged launch unchanged)."""
    ln = replace(v.launches[0], grid=(parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")), block=(parse(str(64 * bn // wn)),))
    return replace(v, options=(f"-DKREG_BN={bn}", f"-DKREG_WN={wn}", f"-DKREG_BK={bk}", f"-DKREG_DB={db}", f"-DKREG_MINB={minb}"),
                   launches=(ln,) + tuple(v.launches[1:]),
                   name=f"tc_bn{bn}_wn{wn}_bk{bk}" + "_db" * db + (f"_b{minb}" if minb != 1 else ""))


def tca_config(v, bn: int, wn: int, bk: int, minb: int = 1):
    """gemm_tc with KREG_ASYNC=1 (cp.async into two stages of dynamic shared memory, steps in pairs) at
    block tile 128 x bn, warp tiles 64 x wn, k step bk."""
    ln = replace(v.launches[0], grid=(parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")), block=(parse(str(64 * bn // wn)),),
                 shared=parse(str(4 * (128 + bn) * (bk + 8))))
    return replace(v, options=(f"-DKREG_BN={bn}", f"-DKREG_WN={wn}", f"-DKREG_BK={bk}", "-DKREG_ASYNC=1", f"-DKREG_MINB={minb}"),
                   launches=(ln,) + tuple(v.launches[1:]), name=f"tca_bn{bn}_wn{wn}_bk{bk}" + (f"_b{minb}" if minb != 1 else ""))


def sw_config(v, bn: int, bk: int, stages: int, wn: int = 64, minb: int = 1):
    """gemm_mma_sw at block tile 128 x bn (warp tiles 64 x wn), k step bk, `stages` pipeline stages, at
    least minb blocks an SM (__launch_bounds__)."""
    opts = tuple(o for o in v.options if not o.startswith(("-DKREG_BN", "-DKREG_BK", "-DKREG_STAGES", "-DKREG_WN", "-DKREG_MINB")))
    opts += (f"-DKREG_BN={bn}", f"-DKREG_BK={bk}", f"-DKREG_STAGES={stages}", f"-DKREG_WN={wn}", f"-DKREG_MINB={minb}")
    ln = replace(v.launches[0], grid=(parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")),
                 block=(parse(str(2 * bn // wn * 32)),), shared=parse(str(stages * (128 + bn) * bk * 2)))
    name = f"sw_bn{bn}_bk{bk}_s{stages}" + (f"_wn{wn}" if wn != 64 else "") + (f"_b{minb}" if minb != 1 else "")
    return replace(v, options=opts, launches=(ln,), name=name)


def ptx_of(v):
    return None if v.vendor else compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


def numerics(which: str = "all") -> None:
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device("gpu")
    print(f"# gemm numerics under the accumulation tolerance: {dev.describe()}  "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    ragged = {k: d for k, d in op.cases.items() if k.startswith("ragged")}
    small = ragged | {k: op.cases[k] for k in ("qwen3-4b-qkv-t17", "qwen3-4b-o")}
    down8 = {"qwen3-8b-down": op.cases["qwen3-8b-down"]}
    plan = [(f"gemm_{d}_cublas", down8) for d in ("bf16", "f16")]
    plan += [(f"gemm_tc_{d}_safe", small) for d in ("bf16", "f16")]
    plan += [(f"gemm_mma_sw_{d}", small) for d in ("bf16", "f16")]
    plan += [("gemm_tc_bf16_safe", down8), ("gemm_mma_sw_bf16", down8), ("gemm_mma_pipe_bf16", down8)]
    if which == "registered":        # the registered configurations after a sweep: small cases only
        plan = [(f"gemm_tc_{d}_safe", small) for d in ("bf16", "f16")] + [(f"gemm_mma_sw_{d}", small) for d in ("bf16", "f16")]
    if which == "3":                 # the third sweep's configurations: small cases and the 4B o projection
        tc, sw = cat.find("gemm_tc_bf16_safe").variant, cat.find("gemm_mma_sw_bf16").variant
        plan = ([(tca_config(tc, *c), small) for c in TCA_CONFIGS] + [(tc_config(tc, *c), small) for c in TC3_CONFIGS[:1]]
                + [(sw_config(sw, *c), small) for c in SW3_CONFIGS])
    for name, cases in plan:
        v = name if not isinstance(name, str) else cat.find(name).variant
        name = v.name
        t0 = time.time()
        num = run_numerics(dev, ptx_of(v), v, op, cases)
        print(f"{name}: {num.status} ({time.time() - t0:.1f} s)", flush=True)
        for c in num.cases:
            w = c.outputs.get("Y", {})
            worst = (w.get("worst") or {}).get("err_over_tol")
            print(f"  {c.case:22s} {'pass' if c.ok else 'FAIL'}  max_abs_err {w.get('max_abs_err', float('nan')):.3g}"
                  f"  worst err/tol {worst if worst is None else round(worst, 4)}", flush=True)
        for f in num.failures()[:4]:
            print(f"  ! {f[:400]}", flush=True)


def speed(sweep: str = "1", dt: str = "bf16") -> None:
    import torch
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device("gpu")
    bw = copy_bandwidth(dev)
    print(f"# gemm {dt} speed, Qwen3-4B layer at T = 2048: {dev.describe()}  "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  copy {bw / 1e12:.2f} TB/s  torch {torch.__version__}",
          flush=True)
    base = cat.find(f"gemm_mma_sw_{dt}").variant
    tc = cat.find(f"gemm_tc_{dt}_safe").variant
    alone = replace(tc, launches=tuple(tc.launches[:1]), name="tc_without_ragged")   # the empty launch's cost
    variants = ([tc, alone] + [tc_config(tc, *c) for c in TC_CONFIGS]
                + [sw_config(base, *c) for c in SW_CONFIGS])
    if sweep == "3":
        variants = ([tc, cat.find(f"gemm_mma_sw_{dt}").variant] + [tca_config(tc, *c) for c in TCA_CONFIGS]
                    + [tc_config(tc, *c) for c in TC3_CONFIGS] + [sw_config(base, *c) for c in SW3_CONFIGS])
    elif sweep in SWEEPS:
        sw_c, tc_c = SWEEPS[sweep]
        variants = ([tc, cat.find(f"gemm_mma_sw_{dt}").variant] + [tc_config(tc, *c) for c in tc_c]
                    + [sw_config(base, *c) for c in sw_c])
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
                print(f"  {name:20s} {t:8.1f}us {flops / t / 1e6:5.0f}TF {row['cuBLAS'] / t:.2f}x", flush=True)
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
