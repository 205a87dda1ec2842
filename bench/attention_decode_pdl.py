"""Flash-decoding pair latency as the engine runs it: attention_decode + attention_merge on the Qwen3-4B
heads (Hq 32, Hkv 8, bf16, batch 1), each candidate timed three ways, all as CUDA graphs of many pairs
over K/V cache copies past twice the L2 (median of replays, CUDA events):
  graph  - the pair as two plain kernel nodes (the next kernel starts when the previous one has ended);
  pdl    - both launches with the programmatic-dependent-launch attribute, as the engine's decode step
           (each kernel is scheduled while its predecessor runs and waits in griddepcontrol.wait);
  dec / mer - the decode alone and the merge alone (plain graph nodes).
Cases: n = 640 cached positions of a 4096-position cache (the engine's decode step; P from choose_splits
of the cache size), n = S = 8192 and 32768 (the issue's bandwidth targets, % of copy on the K/V bytes).
Candidates: the decode sources with their split layouts (-DKREG_CYCLIC=1: split p takes positions
p + i*P, the first rows' loads clamped to S - 1 go out with the load of n; -DKREG_SPEC=0: cyclic, those
loads wait for n (but for no division); -DKREG_CYCLIC=0: the chunk [p*C, p*C + C) of the earlier contract),
the safe and the fast merge. Results: bench/results/attention_decode_pdl_gpu.txt. Output: one line per (n, P, candidate): us per pair (graph, pdl), decode and
merge alone, % of copy and max|out - SDPA|.

    python3 bench/attention_decode_pdl.py OUT.txt
"""
from __future__ import annotations

import datetime
import math
import os
import pathlib
import sys
import time

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

SAFE_DEC = "kernels/safe/attention_decode/attention_decode.cu"
TILE3_DEC = "kernels/unsafe/attention_decode/attention_decode_tile3.cu"
SAFE_MER = "kernels/safe/attention_merge/attention_merge.cu"
FAST_MER = "kernels/unsafe/attention_merge/attention_merge_fast.cu"
# (label, decode source, its -D options, merge source, its -D options)
CANDIDATES = [
    ("safe-chunk", SAFE_DEC, ["-DKREG_CYCLIC=0"], SAFE_MER, []),
    ("safe-cyc", SAFE_DEC, [], SAFE_MER, []),
    ("safe-cyc-ns", SAFE_DEC, ["-DKREG_SPEC=0"], SAFE_MER, []),
    ("x4-chunk", TILE3_DEC, ["-DKREG_CYCLIC=0"], FAST_MER, []),
    ("x4-cyc", TILE3_DEC, [], FAST_MER, []),
    ("safecyc+fm", SAFE_DEC, [], FAST_MER, []),
]
CASES = ((640, 4096), (8192, 8192), (32768, 32768))      # (n, S)
HQ = int(os.environ.get("ATTN_HQ", 32))
BATCHES = 21


def bound(dev, cat, variant, op, module, dims, bufs, names, nsets, pdl):
    """Per cache copy, the bound launches [(kernel, config, args)] of one module through variant."""
    per_set = []
    for s in range(nsets):
        ptrs = {k: (bufs[k][s] if isinstance(bufs[k], list) else bufs[k]).data_ptr() for k in names}
        ls = []
        for bl in bind(variant, cat.ops[op], ptx_module(dev, module), dims, ptrs):
            c = config(bl)
            if pdl:
                c = runtime.LaunchConfig(c.grid, c.block, c.shared, c.attributes | {runtime.PDL})
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
    for _, src, opts, mer, mopts in CANDIDATES:
        for s, o in ((src, tuple(opts)), (mer, tuple(mopts))):
            if (s, o) not in mods:
                mods[(s, o)] = dev.load(compile_cuda((ROOT / s).read_text(), pathlib.Path(s).name, list(o)).ptx)
    out = open(path, "w")

    def say(s=""):
        print(s, flush=True)
        out.write(s + "\n")
        out.flush()
    say(f"# attention decode+merge latency, Hq {HQ}, Hkv {HKV}, bf16: {torch.cuda.get_device_name(0)}, {sms} SMs, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, copy {bw / 1e12:.2f} TB/s, compile "
        f"{time.time() - t_start:.0f} s")
    say("# candidates: " + "; ".join(f"{lb}={pathlib.Path(s).stem}{''.join(' ' + o for o in op)}+"
                                     f"{pathlib.Path(m).stem}{''.join(' ' + o for o in mo)}"
                                     for lb, s, op, m, mo in CANDIDATES))
    say("# graph: plain graph nodes; pdl: both with the PDL attribute (as the engine's step); dec / mer alone: plain")
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
        say(f"## n={n_val} (S={S}), choose_splits P={P0}: SDPA {peer:.2f} us; copy time of the K/V bytes {ideal:.2f} us")
        say(f"{'n':>6s} {'P':>4s} {'candidate':>11s} {'graph':>7s} {'pdl':>7s} {'dec':>7s} {'mer':>6s} "
            f"{'%copy':>6s} {'%copy pdl':>9s} {'err':>8s}")
        for P in sorted({P0, max(1, P0 // 2), 2 * P0}):
            o_part = torch.empty(P, HQ, D, device="cuda", dtype=torch.float32)
            lse = torch.empty(P, HQ, device="cuda", dtype=torch.float32)
            bufs = {"q": q, "k_cache": ks, "v_cache": vs, "n": n, "o_part": o_part, "lse_part": lse, "out": outb}
            dd, md = {"Hq": HQ, "Hkv": HKV, "S": S, "P": P}, {"Hq": HQ, "P": P}
            for label, src, opts, mer, mopts in CANDIDATES:
                t = {}
                for pdl in (False, True):
                    dec_l = bound(dev, cat, dec_v, "attention_decode", mods[(src, tuple(opts))], dd, bufs,
                                  ("q", "k_cache", "v_cache", "n", "o_part", "lse_part"), nsets, pdl)
                    mer_l = bound(dev, cat, mer_v, "attention_merge", mods[(mer, tuple(mopts))], md, bufs,
                                  ("o_part", "lse_part", "out"), 1, pdl)
                    if not pdl:
                        outb.zero_()
                        runner(dec_l, mer_l)(0)
                        torch.cuda.synchronize()
                        err = (outb.float() - want).abs().max().item()
                        t["dec"] = graph_us(dev, runner(dec_l), count, BATCHES)
                        t["mer"] = graph_us(dev, runner(mer_l), count, BATCHES)
                    t[pdl] = graph_us(dev, runner(dec_l, mer_l), count, BATCHES)
                say(f"{n_val:6d} {P:4d} {label:>11s} {t[False]:7.2f} {t[True]:7.2f} {t['dec']:7.2f} {t['mer']:6.2f} "
                    f"{100 * ideal / t[False]:5.1f}% {100 * ideal / t[True]:8.1f}% {err:8.1e}"
                    + ("  <- choose_splits" if P == P0 else ""))
        del ks, vs
        torch.cuda.empty_cache()
    say(f"# total {time.time() - t_start:.0f} s")
    out.close()


if __name__ == "__main__":
    main(sys.argv[1])
