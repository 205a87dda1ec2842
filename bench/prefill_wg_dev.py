"""The fa3 helper's device checks of the wgmma prefill (kernels/safe/attention_prefill/attention_prefill_wg.cu);
bench/dev_fa3.sh runs each mode in its own process:

    python3 bench/prefill_wg_dev.py probe OUT.txt     # the RS / transpose-b layout probe (attention_prefill_wg_probe_*):
                                                      # A [64][BN] x B [BN][128] of small integers (exact) through
                                                      # A register fragments and an MN-major V stage, raw
                                                      # accumulators per (thread, register) against the assumed
                                                      # layout, on the GPU and in the emulator; random normals:
                                                      # GPU vs emulator bits
    python3 bench/prefill_wg_dev.py numerics OUT.txt CFG...  # conformance numerics (float64 reference) of each
                                                      # build at the small cases (the first also at qwen3-4b-t2048)
    python3 bench/prefill_wg_dev.py speed OUT.txt CFG...     # Qwen3-4B heads at T = 2048, 8192: SDPA flash, the
                                                      # registered tc_lf, each build (conformance timing)
CFG: BN,STAGES[,PIPE[,MINB[,PINGPONG[,QREG[,LONGEST_FIRST]]]]] (e.g. 64,2 128,2 64,3,1 128,3,1,1,1 64,4,1,1,0,1
128,2,0,1,0,0,1; LONGEST_FIRST as the registered build unless given); bf16 unless DT=f16 in the environment.
"""
from __future__ import annotations

import datetime
import os
import sys
from dataclasses import replace

import numpy as np

from kreg.checker.ptx.bind import BoundLaunch
from kreg.checker.ptx.compile import compile_cuda
from kreg.registry.catalog import load_catalog
from kreg.registry.expr import parse

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))

DT = os.environ.get("DT", "bf16")
SMALL = ("ragged-g1-t3", "ragged-g2-t65", "ragged-g4-t129", "ragged-g5-t100", "ragged-g8-t33", "qwen3-4b-t17",
         "qwen3-0.6b-t17", "qwen3-4b-chunk")
LARGE = ("qwen3-4b-t2048",)     # the first build only (its float64 reference takes a while)
SPEED = {"qwen3-4b-t2048": {"T": 2048, "Hq": 32, "Hkv": 8, "S": 2048, "start": 0},
         "qwen3-4b-t8192": {"T": 8192, "Hq": 32, "Hkv": 8, "S": 8192, "start": 0}}


def shared_bytes(bn: int, stages: int, qreg: int = 0) -> int:
    return (0 if qreg else 2 * 128 * 128) + stages * 4 * bn * 128 + 1024


def build(v, cfg: str):
    """The registered variant v at BN, STAGES[, PIPE[, MINB[, PINGPONG[, QREG]]]] = cfg."""
    bn, stages, *rest = (int(x) for x in cfg.split(","))
    lf0 = int(next((o.split("=")[1] for o in v.options if o.startswith("-DKREG_LONGEST_FIRST=")), "1"))
    pipe, minb, pp, qreg, lf = (rest + [0, 1, 0, 0, lf0][len(rest):])[:5]
    opts = tuple(o for o in v.options if not o.startswith(("-DKREG_BN", "-DKREG_STAGES", "-DKREG_MINB", "-DKREG_PIPE",
                                                           "-DKREG_PINGPONG", "-DKREG_QREG", "-DKREG_LONGEST_FIRST")))
    opts += (f"-DKREG_BN={bn}", f"-DKREG_STAGES={stages}", f"-DKREG_PIPE={pipe}", f"-DKREG_MINB={minb}",
             f"-DKREG_PINGPONG={pp}", f"-DKREG_QREG={qreg}", f"-DKREG_LONGEST_FIRST={lf}")
    ln = replace(v.launches[0], shared=parse(str(shared_bytes(bn, stages, qreg))))
    return replace(v, options=opts, launches=(ln,),
                   name=f"wg_bn{bn}_s{stages}_p{pipe}{'_pp' if pp else ''}{'_qr' if qreg else ''}{'_lf' if lf else ''}"
                        f"_b{minb}_{v.types['DT']}")


def ptx_of(v):
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


def bits_of(a: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bf16":
        u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.ascontiguousarray(a, np.float32).astype(np.float16).view(np.uint16)


def value_of(bits: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.view(np.float16).astype(np.float64)


def to_tile(raw: np.ndarray) -> np.ndarray:
    """Raw accumulators [128 threads][64 registers] -> the m64n128 tile (the assumed wgmma D layout)."""
    t = np.arange(128)[:, None]
    i = np.arange(64)[None, :]
    w, lane, j, h = t // 32, t % 32, i // 4, i % 4
    tile = np.zeros((64, 128))
    tile[16 * w + lane // 4 + 8 * (h // 2), 8 * j + 2 * (lane % 4) + h % 2] = raw
    return tile


def gpu_probe(gmod, entry, a, b, bn):
    import cupy
    a, b = cupy.asarray(a), cupy.asarray(b)
    d = cupy.zeros(128 * 64, dtype=cupy.float32)
    gmod.launch(BoundLaunch(entry, (1, 1, 1), (128, 1, 1), 4 * bn * 128 + 1024,
                            (np.uint64(a.data.ptr), np.uint64(b.data.ptr), np.uint64(d.data.ptr))))
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(d).reshape(128, 64)


def emu_probe(emod, entry, a, b, bn):
    from kreg.checker.emulator.machine import Memory, launch
    mem = Memory()
    pa, pb, pd = mem.alloc(a.nbytes), mem.alloc(b.nbytes), mem.alloc(128 * 64 * 4)
    mem.write(pa, a)
    mem.write(pb, b)
    launch(emod, entry, 1, 128, 4 * bn * 128 + 1024, [np.uint64(pa), np.uint64(pb), np.uint64(pd)], mem)
    return np.frombuffer(mem.read(pd, 128 * 64 * 4), np.float32).reshape(128, 64)


def probe(out_path: str) -> None:
    from kreg.runtime import parsed
    from kreg.runtime.gpu import GpuModule
    lines = [f"# attention_prefill_wg probe (wgmma RS, transpose-b): {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"]

    def say(s):
        print(s, flush=True)
        lines.append(s)
    src = (__import__('pathlib').Path(__file__).resolve().parent.parent
           / "kernels/unsafe/attention_prefill/attention_prefill_wg.cu").read_text()
    for bn in (64, 128):
        ptx = compile_cuda(src, "attention_prefill_wg.cu", ("--gpu-architecture=compute_90a", f"-DKREG_BN={bn}")).ptx
        gmod, emod = GpuModule(ptx), parsed(ptx)
        for dt in ("bf16", "f16"):
            rng = np.random.default_rng(bn)
            entry = f"attention_prefill_wg_probe_{dt}"
            for kind in ("int", "normal"):
                if kind == "int":
                    A = rng.integers(-4, 5, (64, bn)).astype(np.float32)
                    B = rng.integers(-4, 5, (bn, 128)).astype(np.float32)
                else:
                    A, B = rng.standard_normal((64, bn)).astype(np.float32), rng.standard_normal((bn, 128)).astype(np.float32)
                a, b = bits_of(A, dt), bits_of(B, dt)
                exact = value_of(a, dt) @ value_of(b, dt)
                g = gpu_probe(gmod, entry, a, b, bn)
                row = f"BN {bn} {dt} {kind:6s}: GPU vs A B: max |err| {np.abs(to_tile(g) - exact).max():.3g}"
                if kind == "int":
                    bad = np.argwhere(to_tile(g) != exact)
                    row += f", {len(bad)} of 8192 differ" + (f" (first at row, col {bad[0].tolist()})" if len(bad) else "")
                try:
                    e = emu_probe(emod, entry, a, b, bn)
                    row += (f" | emulator vs A B: max |err| {np.abs(to_tile(e) - exact).max():.3g}"
                            f" | GPU vs emulator bit-identical {np.mean(g.view(np.uint32) == e.view(np.uint32)):.4f}")
                except Exception as ex:          # noqa: BLE001 (reported, the GPU half still counts)
                    row += f" | emulator: {type(ex).__name__}: {str(ex)[:120]}"
                say(row)
    open(out_path, "a").write("\n".join(lines) + "\n")


def numerics(out_path: str, cfgs: list[str]) -> None:
    from kreg.conformance.devices import open_device
    from kreg.conformance.numerics import run_numerics
    cat = load_catalog()
    v0 = cat.find(f"attention_prefill_wg_{DT}").variant
    op = cat.ops["attention_prefill"]
    dev = open_device(os.environ.get("FA3_DEVICE", "gpu"))          # cpu: a dry run of this script
    with open(out_path, "a") as f:
        for i, cfg in enumerate(cfgs):
            cases = {c: op.cases[c] for c in SMALL + (LARGE if i == 0 else ())}
            v = build(v0, cfg)
            num = run_numerics(dev, ptx_of(v), v, op, cases)
            text = f"{v.name}: {num.status} at {', '.join(cases)}\n" + "".join(f"  {x}\n" for x in num.failures()[:6])
            print(text, end="", flush=True)
            f.write(text)


def speed(out_path: str, cfgs: list[str]) -> None:
    import torch
    from kreg.conformance.devices import open_device
    from kreg.conformance.speed import copy_bandwidth, time_case
    from attention_prefill_gpu import sdpa_us
    cat = load_catalog()
    op = cat.ops["attention_prefill"]
    v0 = cat.find(f"attention_prefill_wg_{DT}").variant
    ref_v = cat.find(f"attention_prefill_tc_lf_{DT}").variant
    safe_v = cat.find(f"attention_prefill_tc_{DT}_safe").variant
    dev = open_device("gpu")
    bw = copy_bandwidth(dev)
    builds = {"tc_lf": ref_v} | {cfg: build(v0, cfg) for cfg in cfgs}
    if os.environ.get("FA3_SAFE"):
        builds = {"tc_safe": safe_v} | builds
    mods = {}
    for k, v in builds.items():
        try:
            mods[k] = dev.load(ptx_of(v))
        except Exception as ex:                  # noqa: BLE001
            print(f"{k}: load failed {ex}", flush=True)
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[DT]
    f = open(out_path, "a")

    def say(text):                           # each figure as it comes (the run may be cut short)
        print(text, flush=True)
        f.write(text + "\n")
        f.flush()
    say(f"# attention_prefill {DT} wg builds vs SDPA flash: {dev.describe()}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    for case, dims in SPEED.items():
        ref, _ = sdpa_us(torch, dims, tdt)
        flops = float(op.flops(dims))
        say(f"{case:15s} SDPA flash {ref:8.1f} us ({flops / ref / 1e6:5.1f} TF/s)")
        for k in mods:
            try:
                t = time_case(dev, mods[k], builds[k], op, dims, bw)["median_us"]
                say(f"  {case:15s} {k:14s} {t:8.1f} us  x SDPA {t / ref:5.2f}  ({flops / t / 1e6:5.1f} TF/s)")
            except Exception as ex:              # noqa: BLE001
                say(f"  {case:15s} {k:14s} failed {str(ex)[:100]}")
    f.close()


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    {"probe": lambda: probe(out), "numerics": lambda: numerics(out, sys.argv[3:] or ["64,2"]),
     "speed": lambda: speed(out, sys.argv[3:] or ["64,2"])}[mode]()
