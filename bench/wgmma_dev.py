"""The gemm helper's device checks of the Hopper wgmma GEMM (bench/dev_gemm.sh runs each mode in its own
process):

    python3 bench/wgmma_dev.py probe OUT.txt  # the layout probe (wgmma_probe_bf16: one m64n64 tile, raw
                                              # accumulators per thread and register) on designed inputs:
                                              # identity A or B with coded rows / columns / k, random
                                              # small integers (exact), random normals (the raw fp32 bits
                                              # written to OUT.txt for the emulator's bit-exact test)
    python3 bench/wgmma_dev.py numerics       # gemm_wgmma in a few tile configurations: random-integer
                                              # tiles (exact up to one rounding; mismatches mapped by
                                              # position in the tile), then conformance numerics
    python3 bench/wgmma_dev.py speed          # Qwen3-4B layer at T = 2048: cuBLAS vs gemm_wgmma configs
    python3 bench/wgmma_dev.py fitcheck       # the emulator's fitted wgmma accumulation vs the GPU's bits
                                              # (bf16, f16; normal and wide-exponent operands)
"""
from __future__ import annotations

import datetime
import sys
import time
from dataclasses import replace

import numpy as np

from kreg.checker.ptx.bind import BoundLaunch
from kreg.checker.ptx.compile import compile_cuda
from kreg.registry.catalog import load_catalog
from kreg.registry.expr import parse

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))

LAYER = ("qwen3-4b-qkv", "qwen3-4b-o", "qwen3-4b-gate-up", "qwen3-4b-down")
CONFIGS = ((192, 5), (160, 5), (160, 6), (192, 4),                 # (BN, STAGES[, blocks an SM[, kind[, l2pf]]])
           (192, 5, 1, 1), (160, 6, 1, 1), (192, 4, 1, 2))                 # kind 1: a producer warpgroup; 2: persistent
MAIN = (CONFIGS[0], CONFIGS[1])          # the registered gemm_wgmma192 and gemm_wgmma: numerics at 4B o, both dtypes
# run 2 (bench/results/gemm_wgmma_dev_2026-11-24.txt): persistent blocks (epilogue from registers) 45-67%
# of cuBLAS over the layer, the L2::256B hint no change, 224-wide 69.5%: dropped from the sweep


def wgmma_config(v, bn: int, stages: int, minb: int = 1, kind: int = 0, l2pf: int = 0):
    """gemm_wgmma at block tile 128 x bn with `stages` cp.async stages, at least minb blocks an SM; kind 0:
    256 threads copy and multiply; 1: plus a producer warpgroup (KREG_WS); 2: persistent (KREG_PERSIST,
    grid min(tiles, 132)); l2pf: copies with the L2::256B prefetch hint."""
    opts = tuple(o for o in v.options if not o.startswith(("-DKREG_BN", "-DKREG_STAGES", "-DKREG_MINB", "-DKREG_WS",
                                                           "-DKREG_PERSIST", "-DKREG_L2PF")))
    opts += (f"-DKREG_BN={bn}", f"-DKREG_STAGES={stages}", f"-DKREG_MINB={minb}", f"-DKREG_WS={int(kind > 0)}",
             f"-DKREG_PERSIST={int(kind == 2)}", f"-DKREG_L2PF={l2pf}")
    grid = ((parse(f"min(cdiv(T, 128) * cdiv(N, {bn}), 132)"),) if kind == 2
            else (parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")))
    ln = replace(v.launches[0], grid=grid, block=(parse("384" if kind else "256"),),
                 shared=parse(str(stages * (128 + bn) * 128 + 1024)))
    name = (f"wgmma{('', '_ws', '_pers')[kind]}_bn{bn}_s{stages}" + (f"_b{minb}" if minb != 1 else "")
            + ("_pf" if l2pf else "") + f"_{v.types['DT']}")
    return replace(v, options=opts, launches=(ln,), name=name)


def ptx_of(v):
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


def probe_layout(tid: int, i: int) -> tuple[int, int]:
    """The (row, column) of accumulator i of thread tid in an m64nN wgmma tile (the assumed layout)."""
    warp, lane = tid // 32, tid % 32
    j, h = i // 4, i % 4
    return 16 * warp + lane // 4 + 8 * (h // 2), 8 * j + 2 * (lane % 4) + h % 2


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns (round to nearest even; no NaNs here)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_round(a: np.ndarray) -> np.ndarray:
    return (bf16_bits(a).astype(np.uint32) << 16).view(np.float32)


def run_probe(mod, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Raw accumulators [128][32] of wgmma_probe_bf16 on A [64][K], B [64][K] (bf16 from float32)."""
    import cupy
    K = A.shape[1]
    a, b = cupy.asarray(bf16_bits(A)), cupy.asarray(bf16_bits(B))
    d = cupy.zeros(128 * 32, dtype=cupy.float32)
    mod.launch(BoundLaunch("wgmma_probe_bf16", (1, 1, 1), (128, 1, 1), 16384 * (K // 64) + 1024,
                           (np.uint64(a.data.ptr), np.uint64(b.data.ptr), np.uint64(d.data.ptr), np.int32(K))))
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(d).reshape(128, 32)


def bits_of(a: np.ndarray, dt: str) -> np.ndarray:
    return bf16_bits(a) if dt == "bf16" else np.ascontiguousarray(a, np.float32).astype(np.float16).view(np.uint16)


def value_of(bits: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.view(np.float16).astype(np.float64)


def probe_raw(run, module, dt: str, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Raw accumulators [128][32] of wgmma_probe_<dt> on A, B (float32, rounded to dt) through `run`
    (launch(module, entry, grid, block, shared, args, Memory) on the emulator, or a GpuModule's)."""
    return run(module, f"wgmma_probe_{dt}", bits_of(A, dt), bits_of(B, dt), A.shape[1])


def gpu_probe(gmod, entry, a, b, K):
    import cupy
    a, b = cupy.asarray(a), cupy.asarray(b)
    d = cupy.zeros(128 * 32, dtype=cupy.float32)
    gmod.launch(BoundLaunch(entry, (1, 1, 1), (128, 1, 1), 16384 * (K // 64) + 1024,
                            (np.uint64(a.data.ptr), np.uint64(b.data.ptr), np.uint64(d.data.ptr), np.int32(K))))
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(d).reshape(128, 32)


def emu_probe(emod, entry, a, b, K):
    from kreg.checker.emulator.machine import Memory, launch
    mem = Memory()
    pa, pb, pd = mem.alloc(a.nbytes), mem.alloc(b.nbytes), mem.alloc(128 * 32 * 4)
    mem.write(pa, a)
    mem.write(pb, b)
    launch(emod, entry, 1, 128, 16384 * (K // 64) + 1024, [np.uint64(pa), np.uint64(pb), np.uint64(pd), np.int32(K)], mem)
    return np.frombuffer(mem.read(pd, 128 * 32 * 4), np.float32).reshape(128, 32)


def fitcheck() -> None:
    """The emulator's fitted wgmma accumulation (checker/emulator/wgmma.py) against the H100 on fresh inputs:
    both dtypes, normal and wide-exponent operands, K = 256; fraction of registers bit-identical."""
    from kreg.runtime import parsed
    from kreg.runtime.gpu import GpuModule
    src = (__import__('pathlib').Path(__file__).resolve().parent.parent / "kernels/unsafe/gemm/gemm_wgmma.cu").read_text()
    ptx = compile_cuda(src, "gemm_wgmma.cu", ("--gpu-architecture=compute_90a", "-DKREG_BN=64")).ptx
    gmod, emod = GpuModule(ptx), parsed(ptx)

    print(f"# wgmma accumulation: emulator vs H100 {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    for dt in ("bf16", "f16"):
        for kind in ("normal", "wide"):
            for seed in (11, 12):
                rng = np.random.default_rng(seed)
                A, B = (rng.standard_normal((64, 256)).astype(np.float32) for _ in range(2))
                if kind == "wide":     # exponents spread over 2^-6 .. 2^6 (inside f16's range)
                    A *= np.exp2(rng.integers(-6, 7, A.shape)).astype(np.float32)
                    B *= np.exp2(rng.integers(-6, 7, B.shape)).astype(np.float32)
                g, e = probe_raw(gpu_probe, gmod, dt, A, B), probe_raw(emu_probe, emod, dt, A, B)
                Av, Bv = value_of(bits_of(A, dt), dt), value_of(bits_of(B, dt), dt)
                S = to_tile(np.ones((128, 32))) * (np.abs(Av) @ np.abs(Bv).T)
                exact = Av @ Bv.T
                err = np.abs(to_tile(g) - to_tile(e)) / S
                ulps = np.abs(g.view(np.int32).astype(np.int64) - e.view(np.int32).astype(np.int64))
                print(f"{dt} {kind:6s} seed {seed}: bit-identical {np.mean(g.view(np.uint32) == e.view(np.uint32)):.4f}"
                      f" (one rounding of the exact sum: {np.mean(to_tile(g) == exact.astype(np.float32)):.4f}),"
                      f" max ulps apart {ulps.max()}, max |gpu - emu| / S {err.max():.3g}", flush=True)


def to_tile(raw: np.ndarray) -> np.ndarray:
    D = np.full((64, 64), np.nan, np.float64)
    for t in range(128):
        for i in range(32):
            D[probe_layout(t, i)] = raw[t, i]
    return D


def probe(out_path: str) -> None:
    from kreg.runtime.gpu import GpuModule
    src = (__import__('pathlib').Path(__file__).resolve().parent.parent / "kernels/unsafe/gemm/gemm_wgmma.cu").read_text()
    ptx = compile_cuda(src, "gemm_wgmma.cu", ("--gpu-architecture=compute_90a", "-DKREG_BN=64")).ptx
    mod = GpuModule(ptx)
    print(f"# wgmma layout probe {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    m = np.arange(64)
    eye = (m[:, None] == m[None, :]).astype(np.float32)            # [64][64]: 1 at k == row
    designs = {   # name: (A, B, what D[m, n] should be)
        "P1 A=I, B[n,k]=n+1 (D = n+1)": (eye, np.repeat((m + 1.0)[:, None], 64, 1)),
        "P2 A=I, B[n,k]=k+1 (D = m+1)": (eye, np.repeat((m + 1.0)[None, :], 64, 0)),
        "P3 B=I, A[m,k]=m+1 (D = m+1)": (np.repeat((m + 1.0)[:, None], 64, 1), eye),
        "P4 B=I, A[m,k]=k+1 (D = n+1)": (np.repeat((m + 1.0)[None, :], 64, 0), eye),
    }
    rng = np.random.default_rng(5)
    designs["P5 random integers in [-3, 3], K = 256 (exact)"] = (rng.integers(-3, 4, (64, 256)).astype(np.float32),
                                                                rng.integers(-3, 4, (64, 256)).astype(np.float32))
    ok_all = True
    for name, (A, B) in designs.items():
        raw = run_probe(mod, A, B)
        want = A.astype(np.float64) @ B.astype(np.float64).T
        D = to_tile(raw)
        bad = np.argwhere(D != want)
        ok_all &= len(bad) == 0
        print(f"{name}: {'OK' if len(bad) == 0 else f'{len(bad)} of 4096 MISMATCH'}", flush=True)
        if len(bad):
            print("  first mismatches (row, col: got, want): " +
                  "; ".join(f"{r},{c}: {D[r, c]:g}, {want[r, c]:g}" for r, c in bad[:16]))
            print("  mismatch count by (row // 8, col // 8):")
            grid = np.zeros((8, 8), int)
            for r, c in bad:
                grid[r // 8, c // 8] += 1
            print("\n".join("   " + " ".join(f"{x:3d}" for x in row) for row in grid))
            if not name.startswith("P5"):
                print("  raw registers of warp 0 (lane: reg 0..31):")
                for t in range(32):
                    print(f"   {t:2d}: " + " ".join(f"{x:g}" for x in raw[t]))
    # random normals: the raw bits for the emulator, and the error against float64 under the op's bound
    A = rng.standard_normal((64, 256)).astype(np.float32)
    B = rng.standard_normal((64, 256)).astype(np.float32)
    Ab, Bb = bf16_round(A), bf16_round(B)
    raw = run_probe(mod, A, B)
    raw2 = run_probe(mod, A, B)
    want = Ab.astype(np.float64) @ Bb.astype(np.float64).T
    S = np.abs(Ab).astype(np.float64) @ np.abs(Bb).astype(np.float64).T
    err = np.abs(to_tile(raw) - want) / S
    print(f"P6 random normals, K = 256: max |D - exact| / S = {err.max():.3g} (3 K u = {3 * 256 * 2**-24:.3g}); "
          f"repeat identical: {np.array_equal(raw.view(np.uint32), raw2.view(np.uint32))}; exact-equal fraction "
          f"{np.mean(to_tile(raw) == want):.3f}", flush=True)
    with open(out_path, "w") as fh:
        fh.write(f"# wgmma_probe_bf16 raw accumulators [128 threads][32 registers] as float32 hex; inputs: "
                 f"numpy default_rng(5), after P5's two integer draws, standard_normal((64, 256)) for A then B, "
                 f"rounded to bf16; layout checks {'all OK' if ok_all else 'FAILED'}\n")
        for t in range(128):
            fh.write(" ".join(f"{x:08x}" for x in raw[t].view(np.uint32)) + "\n")


def tile_check(dev_mod, v, T: int, N: int, K: int, seed: int = 1) -> str:
    """gemm on random integers in [-2, 2] (fp32 sums exact: Y = the exact sum rounded once) and its
    mismatches by position: the count by (row % 128 // 16, col % BN // 8 mod 8)."""
    import cupy
    import torch
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[v.types["DT"]]
    g = torch.Generator(device="cpu").manual_seed(seed)
    X = torch.randint(-2, 3, (T, K), generator=g).to(dt).cuda()
    W = torch.randint(-2, 3, (N, K), generator=g).to(dt).cuda()
    Y = torch.full((T, N), float("nan"), dtype=dt, device="cuda")
    ln = v.launches[0]
    dims = {"T": T, "N": N, "K": K}
    grid = tuple(int(e(dims)) for e in ln.grid) + (1,) * (3 - len(ln.grid))
    block = tuple(int(e(dims)) for e in ln.block) + (1,) * (3 - len(ln.block))
    dev_mod.launch(BoundLaunch(ln.entry, grid, block, int(ln.shared(dims)),
                               (np.uint64(X.data_ptr()), np.uint64(W.data_ptr()), np.uint64(Y.data_ptr()),
                                np.int32(T), np.int32(N), np.int32(K))))
    cupy.cuda.runtime.deviceSynchronize()
    want = (X.double() @ W.double().T).to(dt)
    bad = (Y.view(torch.int16) != want.view(torch.int16)).cpu().numpy()
    if not bad.any():
        return f"T={T} N={N} K={K}: exact OK"
    idx = np.argwhere(bad)
    bn = int(v.options[[o.startswith("-DKREG_BN") for o in v.options].index(True)].split("=")[1])
    grid = np.zeros((8, 8), int)
    for r, c in idx:
        grid[(r % 128) // 16, ((c % bn) // 8) % 8] += 1
    Yc, Wc = Y.float().cpu().numpy(), want.float().cpu().numpy()
    first = "; ".join(f"{r},{c}: {Yc[r, c]:g} vs {Wc[r, c]:g}" for r, c in idx[:10])
    return (f"T={T} N={N} K={K}: {len(idx)} of {T * N} MISMATCH; first {first}\n   by (row%128//16, col%BN//8%8):\n" +
            "\n".join("   " + " ".join(f"{x:5d}" for x in row) for row in grid))


def numerics() -> None:
    from kreg.conformance.devices import open_device
    from kreg.conformance.numerics import run_numerics
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device("gpu")
    print(f"# gemm_wgmma numerics: {dev.describe()}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    small = {k: d for k, d in op.cases.items() if k.startswith("ragged")}
    small |= {k: op.cases[k] for k in ("qwen3-4b-qkv-t17",)}
    big = small | {k: op.cases[k] for k in ("qwen3-4b-o",)}
    bf, f16 = cat.find("gemm_wgmma_bf16").variant, cat.find("gemm_wgmma_f16").variant
    plan = [(wgmma_config(b, *c), big) for c in MAIN for b in (bf, f16)]
    plan += [(wgmma_config(bf, *c), small) for c in CONFIGS if c not in MAIN]
    for v, cases in plan:
        from kreg.runtime.gpu import GpuModule
        t0 = time.time()
        try:
            mod = GpuModule(ptx_of(v))
            for shape in ((128, 256, 64), (256, 512, 192), (130, 300, 136)):
                print(f"{v.name} tile check {tile_check(mod, v, *shape)}", flush=True)
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
        for f in num.failures()[:3]:
            print(f"  ! {f[:300]}", flush=True)


def speed(dt: str = "bf16") -> None:
    import torch
    from kreg.conformance.devices import open_device
    from kreg.conformance.speed import copy_bandwidth, time_case
    from torch_peer import linear_us
    cat = load_catalog()
    op = cat.ops["gemm"]
    dev = open_device("gpu")
    bw = copy_bandwidth(dev)
    print(f"# gemm {dt} speed, Qwen3-4B layer at T = 2048: {dev.describe()}  "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  copy {bw / 1e12:.2f} TB/s  torch {torch.__version__}",
          flush=True)
    base = cat.find(f"gemm_wgmma_{dt}").variant
    variants = [cat.find(f"gemm_mma_sw160_{dt}").variant] + [wgmma_config(base, *c) for c in CONFIGS]
    mods = {}
    for v in variants:
        try:
            mods[v.name] = (v, dev.load_variant(v, op, ptx_of(v)))
        except Exception as e:
            print(f"{v.name}: not loaded: {type(e).__name__}: {str(e)[:200]}", flush=True)
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
    tot: dict[str, list[float]] = {}
    best = [0, 0.0]
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
        wg = [t for k, t in row.items() if k.startswith("wgmma")]
        if wg:
            best = [best[0] + flops, best[1] + min(wg)]
    print("# layer (flops summed / times summed)")
    ref = tot["cuBLAS"][1]
    for k, (f, t) in tot.items():
        print(f"{k:24s} {f / t / 1e6:7.1f} TFLOP/s  {100 * ref / t:5.1f}% of cuBLAS", flush=True)
    if best[1]:
        print(f"{'best wgmma per shape':24s} {best[0] / best[1] / 1e6:7.1f} TFLOP/s  {100 * ref / best[1]:5.1f}% of cuBLAS")


if __name__ == "__main__":
    {"probe": probe, "numerics": numerics, "speed": speed, "fitcheck": fitcheck}[sys.argv[1]](*sys.argv[2:])
