"""Flash-decoding structures of helper "decode2" (bench/dev_decode2.sh) on the Qwen3-4B heads (Hq 32, Hkv 8,
bf16, batch 1), timed as bench/attention_decode_dev.py times its candidates (CUDA graphs of many pairs over
K/V cache copies past twice the L2, median of replays; graph = plain nodes, pdl = both launches with the PDL
attribute as the engine's step, dec / mer alone; % of copy on the K/V bytes; max|out - SDPA|). The question
(issue #13): does a different memory structure lower the loads-only floor of the registered rs decode (its
arithmetic replaced by an XOR: 14.73 us as a PDL pair at 8192, 75.9% of copy), so that with the arithmetic
the pair fits 14.9 us? (No: bench/results/attention_decode_dev2_run2.txt.) Structures: the cp.async ring of
bench/attention_decode_cp.cu (bench-only; NST stages of 16 KB a block,
AHEAD steps in flight), contiguous chunks (KREG_CONTIG), one fat block an SM (P = 16, a deeper ring). Each
structure's floor (-DKREG_FLOOR=1) first, then with the arithmetic. A candidate: (label, decode source,
options, merge options and threads, splits (None: choose_splits), dynamic shared bytes, cases (None: all)).

    python3 bench/attention_decode_dev2.py OUT.txt
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

from attention_decode_dev import RS, MER, M4, bound, runner  # noqa: E402
from attention_decode_gpu import HKV, D, graph_us, sdpa, sdpa_us  # noqa: E402

from kreg import runtime  # noqa: E402
from kreg.checker.ptx.compile import compile_cuda  # noqa: E402
from kreg.conformance.devices import open_device  # noqa: E402
from kreg.conformance.speed import copy_bandwidth  # noqa: E402
from kreg.conformance.splits import choose_splits  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402

CP = "bench/attention_decode_cp.cu"
KB = 1024
RS_NM = ("-DKREG_LOOPMASK=0", "-DKREG_PREF=1")
BIG = (8192, 32768)
CANDIDATES = [   # (label, source, options, (merge options, threads), splits, shared bytes, cases)
    # run 2 (16:47, commit e3cd054): nothing beats rs-nm-pf (15.25 / 15.80 PDL); the best pair of any floor is
    # rs's own (14.79, 75.8%): a ring's floor is up to 0.3 us lower alone, never as a PDL pair (its shared memory
    # keeps the next launch's blocks from waiting resident; rs-floor held to 2 blocks an SM: 15.48); the rings
    # with arithmetic 16.0-26 us (bench/results/attention_decode_dev2_run2.txt). The list below is run 2's.
    # run 1 (16:10 UTC, commit 27d0532): the ring's floor is lower alone (cp4-floor 13.17 us against rs-floor
    # 13.65 at 8192) but not as a PDL pair (15.11 against 14.78); contiguous chunks (cp4c-floor 13.52), one
    # fat block an SM (cp8-floor at P = 16: 13.42) no lower; with the arithmetic every ring loses to rs-nm-pf
    # (15.37 us alone, 15.82 as a PDL pair): cp3 16.27 / 16.12, cp2 16.53 / 16.78, cp4 17.60 / 18.31, cp6
    # 28.90, cp8 at P = 16 21.40; and at n = 640 (the masked steps of a round: cp4 10.67 against 4.51).
    # Now: the registers and local memory of each build (spills?), the rs floor at 16 / 66 splits, the floors
    # held to 2 blocks an SM by 80 KB of shared memory (+pad: a third resident block, which the floor builds'
    # few registers allow, loses under PDL), the 2- and 3-stage ring floors, the small rings with register
    # caps for 3 / 4 blocks an SM; the 3- / 4- / 6-stage rings capped at 192 registers (ptxas gives cp4 243,
    # cp6 255, no spills: no room left for the merge block under PDL; 192 spills nothing); dyn: one step a loop
    # iteration with a runtime stage index (compact code: the static rounds are 36-81 KB of SASS against rs's
    # 54 KB in all; 159 registers), not provable by today's checker (the copies in flight across the back
    # edge are completed by later iterations' waits), to see whether the ring pays when its code is small.
    ("rs-nm-pf", RS, RS_NM, M4, None, 0, None),                      # the registered pair
    ("rs-floor", RS, ("-DKREG_FLOOR=1",), M4, (16, 33, 66), 0, BIG),  # its loads-only floor (66: 4 blocks an SM)
    ("rs-floor+pad", RS, ("-DKREG_FLOOR=1",), M4, None, 80 * KB, BIG),   # 2 blocks an SM (80 KB of dynamic shared)
    ("cp2-floor", CP, ("-DKREG_FLOOR=1", "-DKREG_NST=2"), M4, None, 32 * KB, BIG),
    ("cp3-floor", CP, ("-DKREG_FLOOR=1", "-DKREG_NST=3"), M4, None, 48 * KB, BIG),
    ("cp4-floor", CP, ("-DKREG_FLOOR=1",), M4, None, 64 * KB, BIG),
    ("cp4-floor+pad", CP, ("-DKREG_FLOOR=1",), M4, None, 80 * KB, BIG),
    ("cp2", CP, ("-DKREG_NST=2", "-DKREG_PREF=1"), M4, None, 32 * KB, BIG),
    ("cp3", CP, ("-DKREG_NST=3", "-DKREG_PREF=1"), M4, None, 48 * KB, BIG),
    ("cp4", CP, ("-DKREG_PREF=1",), M4, None, 64 * KB, BIG),
    ("cp3-r192", CP, ("-DKREG_PREF=1", "-DKREG_NST=3", "-DKREG_MAXREG=192"), M4, None, 48 * KB, BIG),
    ("cp4-r192", CP, ("-DKREG_PREF=1", "-DKREG_MAXREG=192"), M4, None, 64 * KB, BIG),
    ("cp6-r192", CP, ("-DKREG_PREF=1", "-DKREG_NST=6", "-DKREG_MAXREG=192"), M4, None, 96 * KB, BIG),
    ("dyn4", CP, ("-DKREG_PREF=1", "-DKREG_DYN=1"), M4, None, 64 * KB, None),          # one step an iteration
    ("dyn6", CP, ("-DKREG_PREF=1", "-DKREG_DYN=1", "-DKREG_NST=6"), M4, None, 96 * KB, None),
    ("dyn6-e1", CP, ("-DKREG_PREF=1", "-DKREG_DYN=1", "-DKREG_NST=6", "-DKREG_EARLY=1"), M4, None, 96 * KB, None),
    ("dyn6-floor", CP, ("-DKREG_FLOOR=1", "-DKREG_DYN=1", "-DKREG_NST=6"), M4, None, 96 * KB, BIG),
    ("cp2-m4", CP, ("-DKREG_PREF=1", "-DKREG_NST=2", "-DKREG_MINB=4"), M4, (33, 66), 32 * KB, BIG),   # 4 blocks an SM
    ("cp3-m3", CP, ("-DKREG_PREF=1", "-DKREG_NST=3", "-DKREG_MINB=3"), M4, (33, 49), 48 * KB, BIG),   # 3 blocks an SM
    ("cp2-m4-floor", CP, ("-DKREG_FLOOR=1", "-DKREG_NST=2", "-DKREG_MINB=4"), M4, (66,), 32 * KB, BIG),
]
CASES = ((8192, 8192), (32768, 32768), (640, 4096))   # (n, S): the two, the engine's step at a short context
HQ = 32
BATCHES = 21


def main(path: str, candidates: list = CANDIDATES, title: str = "helper decode2") -> None:
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
    for _, src, opts, (mopts, _t), *_ in candidates:
        for s, o in ((src, tuple(opts)), (MER, tuple(mopts))):
            if (s, o) not in mods:
                mods[(s, o)] = dev.load(compile_cuda((ROOT / s).read_text(), pathlib.Path(s).name, list(o)).ptx)
    out = open(path, "w")

    def say(s=""):
        print(s, flush=True)
        out.write(s + "\n")
        out.flush()
    say(f"# attention decode+merge structures ({title}), Hq {HQ}, Hkv {HKV}, bf16: {torch.cuda.get_device_name(0)}, "
        f"{sms} SMs, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, copy {bw / 1e12:.2f} TB/s, compile "
        f"{time.time() - t_start:.0f} s")
    say("# candidates: " + "; ".join(f"{lb}={pathlib.Path(s).stem}{''.join(' ' + o for o in op)}"
                                     f"{' P=' + ','.join(map(str, sp)) if sp else ''}{f' smem={sh // KB}K' if sh else ''}"
                                     for lb, s, op, _m, sp, sh, _c in candidates))
    say("# graph: plain graph nodes; pdl: both with the PDL attribute (as the engine's step); dec / mer alone: plain")
    for lb, src, opts, *_ in candidates:     # what ptxas made of each decode build (spills: local bytes)
        try:
            fn = mods[(src, tuple(opts))].handle.function("attention_decode_bf16")
            say(f"# build {lb}: {fn.num_regs} registers, {fn.local_size_bytes} local bytes, "
                f"{fn.shared_size_bytes} static shared bytes")
        except Exception as exc:
            say(f"# build {lb}: attributes unavailable ({type(exc).__name__}: {str(exc)[:100]})")

    def timed(t, src, opts, mopts, threads, dd, md, bufs, nsets, count, want, outb, shared):
        for pdl in (False, True):
            dec_l = bound(dev, cat, dec_v, "attention_decode", mods[(src, tuple(opts))], dd, bufs,
                          ("q", "k_cache", "v_cache", "n", "o_part", "lse_part"), nsets, pdl,
                          gridx=-(-(dd["Hq"] // dd["Hkv"]) // 4), shared=shared or None)
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
        say(f"{'n':>6s} {'P':>4s} {'candidate':>11s} {'graph':>7s} {'pdl':>7s} {'dec':>7s} {'mer':>6s} "
            f"{'%copy':>6s} {'%copy pdl':>9s} {'err':>8s}")
        for label, src, opts, (mopts, threads), splits, shared, cases in candidates:
            if cases is not None and n_val not in cases:
                continue
            for P in sorted({P0 if s is None else s for s in (splits or (None,))}):
                o_part = torch.empty(P, HQ, D, device="cuda", dtype=torch.float32)
                lse = torch.empty(P, HQ, device="cuda", dtype=torch.float32)
                bufs = {"q": q, "k_cache": ks, "v_cache": vs, "n": n, "o_part": o_part, "lse_part": lse, "out": outb}
                dd, md = {"Hq": HQ, "Hkv": HKV, "S": S, "P": P}, {"Hq": HQ, "P": P}
                t = {}
                try:
                    timed(t, src, opts, mopts, threads, dd, md, bufs, nsets, count, want, outb, shared)
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
