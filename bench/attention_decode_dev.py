"""Flash-decoding candidates of helper "decode" (bench/dev_decode.sh) on the Qwen3-4B heads (Hq 32, Hkv 8,
bf16, batch 1): each decode + merge candidate timed as bench/attention_decode_pdl.py does (CUDA graphs of
many pairs over K/V cache copies past twice the L2, median of replays): graph (plain nodes), pdl (both
launches with the PDL attribute, as the engine's step), dec / mer alone; % of copy on the K/V bytes and
max|out - SDPA|. Beside them two floors: `floor` = the rs decode with its arithmetic replaced by an XOR of
the loaded words (same loads, loop and grid), and `stream G` = bench/stream_read.cu reading the same
number of bytes contiguously with G blocks of 128 threads (8 loads a thread in flight): what one kernel
launch of that many bytes costs at best here. A candidate is (label, decode source and -D options, merge
-D options and its block's threads, the splits P to time: None = choose_splits).

    python3 bench/attention_decode_dev.py OUT.txt
"""
from __future__ import annotations

import datetime
import math
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from attention_decode_gpu import HKV, D, graph_us, sdpa, sdpa_us  # noqa: E402

from kreg import runtime  # noqa: E402
from kreg.checker.ptx.bind import bind  # noqa: E402
from kreg.checker.ptx.compile import compile_cuda  # noqa: E402
from kreg.conformance.devices import config, open_device, ptx_module  # noqa: E402
from kreg.conformance.speed import copy_bandwidth  # noqa: E402
from kreg.conformance.splits import choose_splits  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402

OLD = "kernels/safe/attention_decode/attention_decode.cu"
RS = "kernels/safe/attention_decode/attention_decode_rs.cu"
MER = "kernels/safe/attention_merge/attention_merge.cu"
M8, M4 = (("-DKREG_WARPS=8",), 256), ((), 128)   # the merge: 8 warps (run 1's default) or 4 (now)
CANDIDATES = [   # (label, decode source, decode options, (merge options, merge threads), splits)
    # run 1 (08:29 UTC): rs-pf+m4 fastest under PDL (15.81 us at 8192, 70.6%); m3 / lazy (168 registers) lose
    # under PDL at P = 33 (a third block fits an SM); the loads-only floor 13.68 us alone, 14.80 us as a PDL pair.
    # run 2 (08:54): UL=8 loses (15.63 us decode against 15.37; 7.1 against 4.2 at n = 640), PREF=2 too; the
    # merge's 4 warps are now its default. run 3 (09:25): no loop masks, the lazy rescale with two blocks an SM
    # forced by dynamic shared memory ("+pad": 80 KB): within 0.1 us of rs-pf; P = 49 loses. Now: the
    # registered pair (rs_nm + the 4-warp merge) beside the previous default and the floor.
    ("safe-pf", OLD, ("-DKREG_PREF=1",), M8, None),
    ("rs-nm-pf", RS, ("-DKREG_LOOPMASK=0", "-DKREG_PREF=1"), M4, None),
    ("rs-nm-lazypf+pad", RS, ("-DKREG_LOOPMASK=0", "-DKREG_LAZY=1", "-DKREG_PREF=1"), M4, None),
    ("floor", RS, ("-DKREG_FLOOR=1",), M4, None),
]
CASES = ((8192, 8192), (32768, 32768), (640, 4096))   # (n, S): the two, the engine's step at a short context
STREAM_GRIDS = ((264, 8), (528, 8), (1056, 8))   # (blocks, loads a thread in flight)
HQ = 32
BATCHES = 21


def bound(dev, cat, variant, op, module, dims, bufs, names, nsets, pdl, threads=None, gridx=None, shared=None):
    """Per cache copy, the bound launches [(kernel, config, args)] of one module through variant (threads,
    gridx: the block's threads and the grid's x dim instead of the variant's)."""
    per_set = []
    for s in range(nsets):
        ptrs = {k: (bufs[k][s] if isinstance(bufs[k], list) else bufs[k]).data_ptr() for k in names}
        ls = []
        for bl in bind(variant, cat.ops[op], ptx_module(dev, module), dims, ptrs):
            c = config(bl)
            grid = (gridx, c.grid[1], c.grid[2]) if gridx else c.grid
            c = runtime.LaunchConfig(grid, (threads, 1, 1) if threads else c.block, shared or c.shared,
                                     c.attributes | ({runtime.PDL} if pdl else set()))
            ls.append((module.kernel(bl.entry), c, bl.args))
        per_set.append(ls)
    return per_set


def runner(*per_sets):
    def run(i, stream=None):
        for per_set in per_sets:
            for kernel, cfg, args in per_set[i % len(per_set)]:
                kernel.launch(cfg, *args, stream=stream)
    return run


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
    mods = {}
    for _, src, opts, (mopts, _t), _p in CANDIDATES:
        for s, o in ((src, tuple(opts)), (MER, tuple(mopts))):
            if (s, o) not in mods:
                mods[(s, o)] = dev.load(compile_cuda((ROOT / s).read_text(), pathlib.Path(s).name, list(o)).ptx)
    stream_mods = {u: dev.load(compile_cuda((ROOT / "bench/stream_read.cu").read_text(), "stream_read.cu",
                                            [f"-DKREG_U={u}"]).ptx) for u in sorted({u for _, u in STREAM_GRIDS})}
    out = open(path, "w")

    def say(s=""):
        print(s, flush=True)
        out.write(s + "\n")
        out.flush()
    say(f"# attention decode+merge candidates (helper decode), Hq {HQ}, Hkv {HKV}, bf16: {torch.cuda.get_device_name(0)}, "
        f"{sms} SMs, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, copy {bw / 1e12:.2f} TB/s, compile "
        f"{time.time() - t_start:.0f} s")
    say("# candidates: " + "; ".join(f"{lb}={pathlib.Path(s).stem}{''.join(' ' + o for o in op)}+merge/{t}"
                                     f"{''.join(' ' + o for o in mo)}" for lb, s, op, (mo, t), _ in CANDIDATES))
    say("# graph: plain graph nodes; pdl: both with the PDL attribute (as the engine's step); dec / mer alone: plain")
    def timed(t, pdl_modes, src, opts, mopts, threads, dd, md, bufs, nsets, count, want, outb, pad=False):
        for pdl in pdl_modes:
            hb = next((int(o.split("=")[1]) for o in opts if o.startswith("-DKREG_HB=")), 4)
            dec_l = bound(dev, cat, dec_v, "attention_decode", mods[(src, tuple(opts))], dd, bufs,
                          ("q", "k_cache", "v_cache", "n", "o_part", "lse_part"), nsets, pdl,
                          gridx=-(-(dd["Hq"] // dd["Hkv"]) // hb), shared=81920 if pad else None)
            mer_l = bound(dev, cat, mer_v, "attention_merge", mods[(MER, tuple(mopts))], md, bufs,
                          ("o_part", "lse_part", "out"), 1, pdl, threads)
            if not pdl:
                outb.zero_()
                runner(dec_l, mer_l)(0)
                torch.cuda.synchronize()
                t["err"] = (outb.float() - want).abs().max().item()
                t["dec"] = graph_us(dev, runner(dec_l), count, BATCHES)
                t["mer"] = graph_us(dev, runner(mer_l), count, BATCHES)
            t[pdl] = graph_us(dev, runner(dec_l, mer_l), count, BATCHES)

    g = torch.Generator(device="cuda").manual_seed(0)
    for n_val, S in CASES:
        kv_bytes = 2 * n_val * HKV * D * 2
        nsets = max(1, math.ceil(2 * dev.l2_bytes / (2 * S * HKV * D * 2)))
        count = max(nsets, 32)
        rnd = lambda *shape: torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g)  # noqa: E731
        q = rnd(HQ, D)
        ks, vs = [rnd(S, HKV, D) for _ in range(nsets)], [rnd(S, HKV, D) for _ in range(nsets)]
        n = torch.tensor([n_val], device="cuda", dtype=torch.int32)
        outb = torch.empty(HQ, D, device="cuda", dtype=torch.bfloat16)
        qs = q.view(1, HQ, 1, D)
        kt = [k[:n_val].permute(1, 0, 2).contiguous().unsqueeze(0) for k in ks]
        vt = [v[:n_val].permute(1, 0, 2).contiguous().unsqueeze(0) for v in vs]
        peer = sdpa_us(torch, qs, kt, vt)
        want = sdpa(torch, qs, kt[0], vt[0])[0, :, 0].float()
        del kt, vt
        ideal = kv_bytes / bw * 1e6
        P0 = choose_splits(S, HKV, sms, HQ)
        say(f"## n={n_val} (S={S}), choose_splits P={P0}: SDPA {peer:.2f} us ({100 * ideal / peer:.1f}%); "
            f"copy time of the K/V bytes {ideal:.2f} us")
        # the floor of one launch reading kv_bytes: the K caches' first kv_bytes of the copies, contiguous
        flat = [torch.cat([k.view(-1), v.view(-1)]) for k, v in zip(ks[:nsets], vs[:nsets])]
        sink = torch.zeros(4096, device="cuda", dtype=torch.int32)
        # (and at the first case the bytes of the Qwen3-4B o projection's weight, 2560 x 4096 bf16: the gemv's floor)
        streams = (((kv_bytes, "the K/V bytes"),) if n_val == S else ()) + (
            ((2560 * 4096 * 2, "4B o-proj W"),) if S == CASES[0][1] else ())
        for nbytes, what in streams:
            parts = []
            for G, u in STREAM_GRIDS + (((640, 8), (1280, 8)) if nbytes != kv_bytes else ()):
                k_stream = stream_mods[u].kernel("stream_read")
                cfg = runtime.LaunchConfig((G, 1, 1), (128, 1, 1))
                args = [(np.uint64(f.data_ptr()), np.int64(nbytes // 16), np.uint64(sink.data_ptr())) for f in flat]
                try:
                    us = graph_us(dev, lambda i, s=None, c=cfg, a=args: k_stream.launch(c, *a[i % len(a)], stream=s),
                                  max(count, math.ceil(2 * dev.l2_bytes / nbytes)), BATCHES)
                    parts.append(f"{G}x{u}: {us:.2f} us {100 * nbytes / bw * 1e6 / us:.1f}%")
                except Exception as exc:
                    parts.append(f"{G}x{u}: FAILED {type(exc).__name__}: {str(exc)[:120]}")
            say(f"# stream read of {what} ({nbytes / 1e6:.1f} MB), one launch, blocks x loads a thread in flight: " + "; ".join(parts))
        del flat
        say(f"{'n':>6s} {'P':>4s} {'candidate':>11s} {'graph':>7s} {'pdl':>7s} {'dec':>7s} {'mer':>6s} "
            f"{'%copy':>6s} {'%copy pdl':>9s} {'err':>8s}")
        for label, src, opts, (mopts, threads), splits in CANDIDATES:
            for P in sorted({P0 if s is None else s for s in (splits or (None,))}):
                o_part = torch.empty(P, HQ, D, device="cuda", dtype=torch.float32)
                lse = torch.empty(P, HQ, device="cuda", dtype=torch.float32)
                bufs = {"q": q, "k_cache": ks, "v_cache": vs, "n": n, "o_part": o_part, "lse_part": lse, "out": outb}
                dd, md = {"Hq": HQ, "Hkv": HKV, "S": S, "P": P}, {"Hq": HQ, "P": P}
                t = {}
                try:
                    timed(t, pdl_modes=(False, True), src=src, opts=opts, mopts=mopts, threads=threads, dd=dd,
                          md=md, bufs=bufs, nsets=nsets, count=count, want=want, outb=outb, pad=label.endswith("+pad"))
                except Exception as exc:       # one broken candidate must not cost the others
                    say(f"{n_val:6d} {P:4d} {label:>11s} FAILED: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                say(f"{n_val:6d} {P:4d} {label:>11s} {t[False]:7.2f} {t[True]:7.2f} {t['dec']:7.2f} {t['mer']:6.2f} "
                    f"{100 * ideal / t[False]:5.1f}% {100 * ideal / t[True]:8.1f}% {t['err']:8.1e}"
                    + ("  <- choose_splits" if P == P0 else ""))
        del ks, vs
        torch.cuda.empty_cache()
    say(f"# total {time.time() - t_start:.0f} s")
    out.close()


if __name__ == "__main__":
    main(sys.argv[1])
