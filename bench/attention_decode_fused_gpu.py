"""Fused flash-decoding (one launch: split + ticket + merge, kernels/unsafe/attention_decode_fused) next to
the registered safe pair (attention_decode + attention_merge, two launches) on the Qwen3-4B heads
(Hq 32, Hkv 8, bf16, batch 1). Each candidate timed two ways, as CUDA graphs of many launches over K/V
cache copies past twice the L2 (median of replays, CUDA events):
  graph - plain kernel nodes (a kernel starts when the previous one has ended);
  pdl   - every launch with the programmatic-dependent-launch attribute, as the engine's decode step.
Cases: n = 640 of a 4096-position cache (the engine's step), n = S = 8192 and 32768 (the issue's
bandwidth targets: % of copy on the K/V bytes). Candidates: fused with -DKREG_PREF=0/1/2 (the first 0/1/2
iterations' K/V rows hinted into the L2 before the PDL wait), -DKREG_MU (splits loaded together by
the merging warp). Numerics: max|out - SDPA| and max|fused out - safe pair out| on the timed inputs,
and the f16 entry once per case. Output: one line per (n, P, candidate).

    python3 bench/attention_decode_fused_gpu.py OUT.txt
"""
from __future__ import annotations

import datetime
import math
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from attention_decode_gpu import HKV, D, graph_us, sdpa, sdpa_us  # noqa: E402
from attention_decode_pdl import bound, runner  # noqa: E402

from kreg import runtime  # noqa: E402
from kreg.checker.ptx.compile import compile_cuda  # noqa: E402
from kreg.conformance.devices import open_device  # noqa: E402
from kreg.conformance.speed import copy_bandwidth  # noqa: E402
from kreg.conformance.splits import choose_splits  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402

FUSED = "kernels/unsafe/attention_decode_fused/attention_decode_fused.cu"
# (label, -D options); those marked * only at choose_splits' P
# (run 1 on the H100, 05:14 UTC: the ticket merge was slower than the pair everywhere, the L2 hints and MU=9
# too: 20.6 / 21.0 / 21.8 / 22.2 / 21.4 us against the pair's 18.6 at n = 8192; now fused and fused-pf1 only)
CANDIDATES = [("fused", []), ("*fused-pf1", ["-DKREG_PREF=1"])]
# cluster merge: (label, cluster size = P, -D options); loaded past kreg's PTX parser (no mapa there yet)
CLUSTERS = [("cl16-w8", 16, ["-DKREG_CL=16", "-DKREG_WARPS=8"]), ("cl16-w4", 16, ["-DKREG_CL=16"]),
            ("cl16-w8-pf8", 16, ["-DKREG_CL=16", "-DKREG_WARPS=8", "-DKREG_PREF=8"]),
            ("cl8-w8", 8, ["-DKREG_CL=8", "-DKREG_WARPS=8"]), ("cl8-w16u2", 8, ["-DKREG_CL=8", "-DKREG_WARPS=16", "-DKREG_U=2"])]
CASES = ((640, 4096), (8192, 8192), (32768, 32768))
if os.environ.get("ATTN_CLUSTER") == "1":      # the cluster candidates alone (a fault there spares the rest)
    CANDIDATES = []
else:
    CLUSTERS = []
HQ = int(os.environ.get("ATTN_HQ", 32))
BATCHES = 21


class Raw:
    """A cluster kernel loaded straight through kreg's GPU module (CuPy), past kreg.runtime (whose launch
    cannot opt in to the non-portable cluster size 16): launch() as kreg's Kernel, typed NumPy arguments."""

    def __init__(self, dev, ptx: str, entry: str, cluster: int):
        from kreg.runtime.gpu import GpuModule
        self.dev, self.module = dev, GpuModule(ptx)        # the module kept alive with its function
        self.fn = self.module.function(entry)
        self.note = ""
        from cuda.bindings import driver as drv
        f = drv.CUfunction(int(self.fn.kernel.ptr))
        if cluster > 8:
            (err,) = drv.cuFuncSetAttribute(
                f, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
            self.note += f"non-portable {err.name}; "
        try:
            (err, nreg) = drv.cuFuncGetAttribute(drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, f)
            (err2, lmem) = drv.cuFuncGetAttribute(drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f)
            self.note += f"{nreg} regs, {lmem} B local; "
        except Exception as e:  # noqa: BLE001
            self.note += f"attrs: {e}; "

    def max_clusters(self, grid, block):
        """cuOccupancyMaxActiveClusters of this launch shape (clusters that fit at once)."""
        try:
            from cuda.bindings import driver as drv
            cfg = drv.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
            cfg.sharedMemBytes = 0
            cfg.attrs, cfg.numAttrs = [], 0
            err, n = drv.cuOccupancyMaxActiveClusters(drv.CUfunction(int(self.fn.kernel.ptr)), cfg)
            return f"{n} ({err.name})"
        except Exception as e:  # noqa: BLE001
            return f"? ({type(e).__name__}: {e})"

    def launch(self, cfg, *args, stream=None):
        from kreg.runtime.gpu import launch_ex
        h = (stream or self.dev.rt.default_stream).handle
        if cfg.attributes:
            launch_ex(self.fn, cfg, args, h.ptr)
        else:
            self.fn(cfg.grid, cfg.block, args, stream=h)


def fused_launches(kernel, bufs, dims, nsets, pdl, extra=None, warps=4):
    """Per cache copy, [(kernel, config, args)] of one fused launch (typed NumPy arguments)."""
    Hq, Hkv, S, P = dims["Hq"], dims["Hkv"], dims["S"], dims["P"]
    cfg = runtime.LaunchConfig((-(-(Hq // Hkv) // 4), P, Hkv), 32 * warps, 0, {runtime.PDL} if pdl else set())
    out = []
    for s in range(nsets):
        b = dict(bufs, **(extra or {}))
        ptrs = [np.uint64(x.data_ptr()) for x in (b["q"], b["k_cache"][s], b["v_cache"][s], b["n"])]
        ptrs2 = [np.uint64(x.data_ptr()) for x in (b["o_part"], b["lse_part"], b["counter"], b["out"])]
        args = (*ptrs, np.float32(0.08838834764831845), *ptrs2, *(np.int32(v) for v in (Hq, Hkv, S, P)))
        out.append([(kernel, cfg, args)])
    return out


def main(path: str) -> None:
    import torch
    t_start = time.time()
    dev = open_device("gpu")
    cat = load_catalog()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bw = copy_bandwidth(dev, batches=7)
    entries = {e.op: e for e in cat.entries if e.op in ("attention_decode", "attention_merge")
               and e.variant.safety == "safe" and e.variant.types["DT"] == "bf16"}
    dec_v, mer_v = entries["attention_decode"].variant, entries["attention_merge"].variant
    load = lambda s, o: dev.load(compile_cuda((ROOT / s).read_text(), pathlib.Path(s).name, list(o)).ptx)  # noqa: E731
    dec_m = load("kernels/safe/attention_decode/attention_decode.cu", [])
    # the safe pair with its decode's first rows hinted into the L2 before the PDL wait (at P0 only)
    pair_pf = {f"pair-pf{k}": load("kernels/safe/attention_decode/attention_decode.cu", [f"-DKREG_PREF={k}"])
               for k in ((1, 2) if CANDIDATES else ())}
    mer_m = load("kernels/safe/attention_merge/attention_merge.cu", [])
    mods = {lb: load(FUSED, o) for lb, o in CANDIDATES}
    raws = {}
    for lb, cl, o in CLUSTERS:
        try:
            raws[lb] = Raw(dev, compile_cuda((ROOT / FUSED).read_text(), "attention_decode_fused.cu", o).ptx,
                           "attention_decode_fused_bf16", cl)
        except Exception as e:  # noqa: BLE001
            print(f"cluster candidate {lb}: {type(e).__name__}: {e}", file=sys.stderr)
    out = open(path, "w")

    def say(s=""):
        print(s, flush=True)
        out.write(s + "\n")
        out.flush()
    say(f"# fused attention decode (split + ticket + merge, one launch) vs the safe pair, Hq {HQ}, Hkv {HKV}, bf16: "
        f"{torch.cuda.get_device_name(0)}, {sms} SMs, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"copy {bw / 1e12:.2f} TB/s, compile {time.time() - t_start:.0f} s")
    say("# candidates: pair = attention_decode + attention_merge (safe, two launches); pair-pfK = the same with the "
        "decode's first K iterations' rows hinted into the L2 before the PDL wait (-DKREG_PREF=K, at choose_splits' P); "
        + "; ".join(f"{lb} = attention_decode_fused{''.join(' ' + x for x in o)}" for lb, o in CANDIDATES)
        + " (* at choose_splits' P only); -DKREG_PREF=k: the first k iterations' K/V rows hinted into the L2 "
        "before the PDL wait (k = 8: the whole split at n = 8192, P = 33)")
    say("# clusters (unsafe, P = cluster size, one launch, merge through distributed shared memory): "
        + "; ".join(f"{lb} = {' '.join(o)} [{raws[lb].note if lb in raws else 'FAILED'}]" for lb, _, o in CLUSTERS))
    say("# graph: plain graph nodes; pdl: every launch with the PDL attribute (as the engine's step); "
        "err: max|out - SDPA|; vs pair: max|fused out - safe pair out|")
    g = torch.Generator(device="cuda").manual_seed(0)
    for n_val, S in CASES:
        kv_bytes = 2 * n_val * HKV * D * 2
        nsets = max(1, math.ceil(2 * dev.l2_bytes / (2 * S * HKV * D * 2)))
        count = max(nsets, 32)
        rnd = lambda *shape, dt=torch.bfloat16: torch.randn(*shape, device="cuda", dtype=dt, generator=g)  # noqa: E731
        q = rnd(HQ, D)
        ks, vs = [rnd(S, HKV, D) for _ in range(nsets)], [rnd(S, HKV, D) for _ in range(nsets)]
        n = torch.tensor([n_val], device="cuda", dtype=torch.int32)
        qs = q.view(1, HQ, 1, D)
        kt = [k[:n_val].permute(1, 0, 2).contiguous().unsqueeze(0) for k in ks]
        vt = [v[:n_val].permute(1, 0, 2).contiguous().unsqueeze(0) for v in vs]
        peer = sdpa_us(torch, qs, kt, vt)
        want = sdpa(torch, qs, kt[0], vt[0])[0, :, 0].float()
        del kt, vt
        ideal = kv_bytes / bw * 1e6
        P0 = choose_splits(S, HKV, sms, HQ)
        say(f"## n={n_val} (S={S}), choose_splits P={P0}: SDPA {peer:.2f} us; copy time of the K/V bytes {ideal:.2f} us")
        say(f"{'n':>6s} {'P':>4s} {'candidate':>10s} {'graph':>7s} {'pdl':>7s} {'%copy':>6s} {'%copy pdl':>9s} "
            f"{'err':>8s} {'vs pair':>8s}")
        for P in sorted({P0, max(1, P0 // 2), 2 * P0} if CANDIDATES else {P0}):
            o_part = torch.empty(P, HQ, D, device="cuda", dtype=torch.float32)
            lse = torch.empty(P, HQ, device="cuda", dtype=torch.float32)
            counter = torch.zeros(HKV * 8, device="cuda", dtype=torch.int32)
            outb = torch.zeros(HQ, D, device="cuda", dtype=torch.bfloat16)
            bufs = {"q": q, "k_cache": ks, "v_cache": vs, "n": n, "o_part": o_part, "lse_part": lse, "out": outb,
                    "counter": counter}
            dd, md = {"Hq": HQ, "Hkv": HKV, "S": S, "P": P}, {"Hq": HQ, "P": P}
            for plabel, pm in pair_pf.items():
                if P != P0:
                    continue
                t = {}
                for pdl in (False, True):
                    dec_l = bound(dev, cat, dec_v, "attention_decode", pm, dd, bufs,
                                  ("q", "k_cache", "v_cache", "n", "o_part", "lse_part"), nsets, pdl)
                    mer_l = bound(dev, cat, mer_v, "attention_merge", mer_m, md, bufs, ("o_part", "lse_part", "out"), 1,
                                  pdl)
                    if not pdl:
                        outb.zero_()
                        runner(dec_l, mer_l)(0)
                        torch.cuda.synchronize()
                        err = (outb.float() - want).abs().max().item()
                    t[pdl] = graph_us(dev, runner(dec_l, mer_l), count, BATCHES)
                say(f"{n_val:6d} {P:4d} {plabel:>10s} {t[False]:7.2f} {t[True]:7.2f} {100 * ideal / t[False]:5.1f}% "
                    f"{100 * ideal / t[True]:8.1f}% {err:8.1e} {0.0:8.1e}  <- choose_splits")
            t = {}
            for pdl in (False, True):
                dec_l = bound(dev, cat, dec_v, "attention_decode", dec_m, dd, bufs,
                              ("q", "k_cache", "v_cache", "n", "o_part", "lse_part"), nsets, pdl)
                mer_l = bound(dev, cat, mer_v, "attention_merge", mer_m, md, bufs, ("o_part", "lse_part", "out"), 1, pdl)
                if not pdl:
                    runner(dec_l, mer_l)(0)
                    torch.cuda.synchronize()
                    pair_out = outb.float().clone()
                    if P == P0:
                        pair_p0 = pair_out
                t[pdl] = graph_us(dev, runner(dec_l, mer_l), count, BATCHES)
            err = (pair_out - want).abs().max().item()
            say(f"{n_val:6d} {P:4d} {'pair':>10s} {t[False]:7.2f} {t[True]:7.2f} {100 * ideal / t[False]:5.1f}% "
                f"{100 * ideal / t[True]:8.1f}% {err:8.1e} {0.0:8.1e}" + ("  <- choose_splits" if P == P0 else ""))
            for label, _ in CANDIDATES:
                if label.startswith("*") and P != P0:
                    continue
                t = {}
                for pdl in (False, True):
                    fl = fused_launches(mods[label].kernel("attention_decode_fused_bf16"), bufs, dd, nsets, pdl)
                    if not pdl:
                        outb.zero_()
                        runner(fl)(0)
                        runner(fl)(0)            # twice: the counter the first launch leaves serves the second
                        torch.cuda.synchronize()
                        err = (outb.float() - want).abs().max().item()
                        dp = (outb.float() - pair_out).abs().max().item()
                        left = int(counter.abs().sum().item())
                    t[pdl] = graph_us(dev, runner(fl), count, BATCHES)
                left = left + int(counter.abs().sum().item())
                say(f"{n_val:6d} {P:4d} {label:>10s} {t[False]:7.2f} {t[True]:7.2f} {100 * ideal / t[False]:5.1f}% "
                    f"{100 * ideal / t[True]:8.1f}% {err:8.1e} {dp:8.1e}" + ("  <- choose_splits" if P == P0 else "")
                    + (f"  COUNTER LEFT {left}" if left else ""))
            if P == P0 and "fused" in mods:             # the f16 entry once: its numerics against SDPA in f16
                q16, k16, v16 = q.half(), ks[0].half(), vs[0].half()
                o16 = torch.zeros(HQ, D, device="cuda", dtype=torch.float16)
                f16 = fused_launches(mods["fused"].kernel("attention_decode_fused_f16"), bufs, dd, 1, False,
                                     {"q": q16, "k_cache": [k16], "v_cache": [v16], "out": o16})
                runner(f16)(0)
                w16 = sdpa(torch, q16.view(1, HQ, 1, D), k16[:n_val].permute(1, 0, 2).unsqueeze(0),
                           v16[:n_val].permute(1, 0, 2).unsqueeze(0))[0, :, 0].float()
                torch.cuda.synchronize()
                say(f"# f16 fused at n={n_val} P={P}: max|out - SDPA f16| {(o16.float() - w16).abs().max().item():.1e}")
                del q16, k16, v16
        for label, cl, _ in CLUSTERS:
            if label not in raws:
                continue
            P = cl
            dd = {"Hq": HQ, "Hkv": HKV, "S": S, "P": P}
            warps = 16 if "w16" in label else 8 if "w8" in label else 4
            bufs = {"q": q, "k_cache": ks, "v_cache": vs, "n": n, "out": outb,
                    "o_part": torch.empty(1, device="cuda"), "lse_part": torch.empty(1, device="cuda"),
                    "counter": torch.zeros(1, device="cuda", dtype=torch.int32)}
            t = {}
            try:
                for pdl in (False, True):
                    fl = fused_launches(raws[label], bufs, dd, nsets, pdl, warps=warps)
                    if not pdl:
                        outb.zero_()
                        runner(fl)(0)
                        torch.cuda.synchronize()
                        err = (outb.float() - want).abs().max().item()
                        dp = (outb.float() - pair_p0).abs().max().item()
                    t[pdl] = graph_us(dev, runner(fl), count, BATCHES)
                say(f"{n_val:6d} {P:4d} {label:>10s} {t[False]:7.2f} {t[True]:7.2f} {100 * ideal / t[False]:5.1f}% "
                    f"{100 * ideal / t[True]:8.1f}% {err:8.1e} {dp:8.1e}  max active clusters "
                    + raws[label].max_clusters((1, P, HKV), (32 * warps, 1, 1)))
            except Exception as e:  # noqa: BLE001
                say(f"# {label} at n={n_val}: {type(e).__name__}: {str(e)[:300]}")
                torch.cuda.synchronize()
        del ks, vs
        torch.cuda.empty_cache()
    say(f"# total {time.time() - t_start:.0f} s")
    out.close()


if __name__ == "__main__":
    main(sys.argv[1])
