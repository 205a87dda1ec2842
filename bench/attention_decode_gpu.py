"""Flash-decoding at batch 1 on the Qwen3-4B heads (Hq 32, Hkv 8, head_dim 128, bf16): attention_decode
followed by attention_merge, safe and unsafe variants of the registry, loaded as their PTX through
kreg.runtime, against torch SDPA (GQA, a [1, Hkv, S, 128] cache) and the device copy bandwidth measured
in the same process. n = S cached positions (8192 and 32768); P from kreg.conformance.splits.choose_splits
(the engine's choice) and a sweep around it; each pair timed as plain graph nodes and with PDL (as the
engine's decode step). Each timing: a CUDA graph of launches over enough K/V cache
copies to exceed twice the L2, warm-up, median of many replays (CUDA events). Bandwidth is counted on the
K/V bytes only (2 * S * Hkv * 128 * 2); the targets are >= 75% of copy at 8192 and >= 85% at 32768.
Prints the device name and the ratios; writes the same text to the path given as the first argument.

    python3 bench/attention_decode_gpu.py bench/results/attention_decode_gpu.txt
"""
from __future__ import annotations

import datetime
import math
import sys

import numpy as np

from kreg.checker.ptx.bind import bind
from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import config, open_harness, ptx_module
from kreg.conformance.speed import copy_bandwidth
from kreg.conformance.splits import choose_splits
from kreg.registry.catalog import load_catalog

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
from torch_peer import graph_us as torch_graph_us  # noqa: E402

HQ, HKV, D = 32, 8, 128
LENGTHS = (8192, 32768)
TARGET = {8192: 0.75, 32768: 0.85}
BATCHES = 31


def graph_us(dev, launch, count: int, batches: int = BATCHES) -> float:
    """Median microseconds per launch(i, stream) call, i < count, captured once as a CUDA graph."""
    cp, stream = dev.cp, dev.rt.stream(non_blocking=True)
    graph = dev.rt.capture(lambda s: [launch(i, s) for i in range(count)])
    for _ in range(3):
        graph.replay(stream)
    stream.sync()
    ts = []
    for _ in range(batches):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream.handle)
        graph.replay(stream)
        b.record(stream.handle)
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3 / count)
    return float(np.median(ts))


class Pair:
    """One decode variant and one merge variant bound to torch-allocated buffers, launched together."""

    def __init__(self, dev, cat, dec, mer, modules, bufs, S, P, pdl=False):
        from kreg import runtime
        self.launches = []
        for entry, dims, names in ((dec, {"Hq": HQ, "Hkv": HKV, "S": S, "P": P},
                                    ("q", "k_cache", "v_cache", "n", "o_part", "lse_part")),
                                   (mer, {"Hq": HQ, "P": P}, ("o_part", "lse_part", "out"))):
            per_set = []
            for s in range(len(bufs["k_cache"])):
                ptrs = {k: (bufs[k][s] if isinstance(bufs[k], list) else bufs[k]).data_ptr() for k in names}
                m = modules[entry.name]
                cfg = (lambda c: runtime.LaunchConfig(c.grid, c.block, c.shared, c.attributes | {runtime.PDL})
                       if pdl else c)
                per_set.append([(m.kernel(bl.entry), cfg(config(bl)), bl.args)
                                for bl in bind(entry.variant, cat.ops[entry.op], ptx_module(dev, m), dims, ptrs)])
            self.launches.append(per_set)

    def __call__(self, i, stream=None):
        for per_set in self.launches:
            for kernel, cfg, args in per_set[i % len(per_set)]:
                kernel.launch(cfg, *args, stream=stream)


def sdpa(torch, q, k, v):
    """torch SDPA with GQA (enable_gqa, torch >= 2.5; older: the KV heads repeated, which reads more)."""
    try:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    except TypeError:
        G = q.shape[1] // k.shape[1]
        return torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(G, 1), v.repeat_interleave(G, 1))


def sdpa_us(torch, q, ks, vs) -> float:
    """torch SDPA (GQA) of one query token over each cache copy in turn, in a torch CUDA graph."""
    return torch_graph_us(torch, lambda i: sdpa(torch, q, ks[i % len(ks)], vs[i % len(vs)]), max(len(ks), 32), BATCHES)


def main(path: str | None) -> None:
    import torch
    dev = open_harness("gpu")
    cat = load_catalog()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bw = copy_bandwidth(dev)
    lines: list[str] = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)
    entries = {e.name: e for e in cat.entries if e.op in ("attention_decode", "attention_merge")
               and e.variant.types["DT"] == "bf16"}
    modules = {n: dev.load(compile_cuda(e.variant.source_path.read_text(), e.variant.source_path.name,
                                        e.variant.options).ptx) for n, e in entries.items()}
    # safe: the registered safe decode + merge; safe-pf: the safe decode whose first rows are hinted into
    # the L2 before the PDL wait (attention_decode_bf16_pf, safe too); unsafe: the unsafe pair
    pairs = {s: (next(e for e in entries.values() if e.op == "attention_decode" and e.variant.safety == s
                      and not e.variant.options),
                 next(e for e in entries.values() if e.op == "attention_merge" and e.variant.safety == s))
             for s in ("safe", "unsafe")}
    # and every other safe bf16 decode (named by its suffix: safe-pf, safe-rs, safe-rs_lazy, ..) with the safe merge
    others = {"safe-" + e.name.split("_bf16_")[1]: (e, pairs["safe"][1]) for e in entries.values()
              if e.op == "attention_decode" and e.variant.safety == "safe" and e is not pairs["safe"][0]}
    pairs = {"safe": pairs["safe"], **others, "unsafe": pairs["unsafe"]}
    say(f"# attention decode+merge, Qwen3-4B heads (Hq {HQ}, Hkv {HKV}), bf16, batch 1: {dev.describe()} "
        f"({torch.cuda.get_device_name(0)}, {sms} SMs)  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  "
        f"copy {bw / 1e12:.2f} TB/s  torch {torch.__version__}")
    say("# variants: " + ", ".join(f"{s}: {d.name} + {m.name}" for s, (d, m) in pairs.items()))
    say("# us: the pair as plain CUDA graph nodes; pdl us: both launches with the PDL attribute, as the engine's "
        "decode step runs them (each kernel scheduled while its predecessor runs, waiting in griddepcontrol.wait)")
    say(f"{'n=S':>6s} {'P':>4s} {'what':>12s} {'us':>8s} {'KV TB/s':>8s} {'% copy':>7s} {'x SDPA':>7s} {'pdl us':>8s} "
        f"{'% copy':>7s}")
    g = torch.Generator(device="cuda").manual_seed(0)
    for S in LENGTHS:
        kv_bytes = 2 * S * HKV * D * 2
        nsets = max(1, math.ceil(2 * dev.l2_bytes / kv_bytes))
        rnd = lambda *shape: torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g)  # noqa: E731
        q = rnd(HQ, D)
        ks, vs = [rnd(S, HKV, D) for _ in range(nsets)], [rnd(S, HKV, D) for _ in range(nsets)]
        n = torch.tensor([S], device="cuda", dtype=torch.int32)
        out = torch.empty(HQ, D, device="cuda", dtype=torch.bfloat16)
        # the peer: SDPA over the same values in its own layout [1, Hkv, S, 128]
        qs = q.view(1, HQ, 1, D)
        kt = [k.permute(1, 0, 2).contiguous().unsqueeze(0) for k in ks]
        vt = [v.permute(1, 0, 2).contiguous().unsqueeze(0) for v in vs]
        peer = sdpa_us(torch, qs, kt, vt)
        want = sdpa(torch, qs, kt[0], vt[0])[0, :, 0].float()
        del kt, vt
        say(f"{S:6d} {'':>4s} {'SDPA':>12s} {peer:8.2f} {kv_bytes / peer / 1e6:8.2f} "
            f"{100 * kv_bytes / peer / 1e6 / (bw / 1e12):6.1f}% {1.0:7.2f}")
        P0 = choose_splits(S, HKV, sms, HQ)
        sweep = sorted({max(1, P0 // 2), P0, min(1024, 2 * P0), min(1024, 4 * P0)})
        at_p0, best = {}, {}
        for P in sweep:
            o_part = torch.empty(P, HQ, D, device="cuda", dtype=torch.float32)
            lse = torch.empty(P, HQ, device="cuda", dtype=torch.float32)
            bufs = {"q": q, "k_cache": ks, "v_cache": vs, "n": n, "o_part": o_part, "lse_part": lse, "out": out}
            for safety, (dec, mer) in pairs.items():
                pair = Pair(dev, cat, dec, mer, modules, bufs, S, P)
                pair(0)
                torch.cuda.synchronize()
                err = (out.float() - want).abs().max().item()
                t = graph_us(dev, pair, max(nsets, 32))
                tp = graph_us(dev, Pair(dev, cat, dec, mer, modules, bufs, S, P, pdl=True), max(nsets, 32))
                frac, fracp = kv_bytes / t / 1e6 / (bw / 1e12), kv_bytes / tp / 1e6 / (bw / 1e12)
                if P == P0:
                    at_p0[safety] = (t, frac)
                    at_p0[safety + " pdl"] = (tp, fracp)
                if safety not in best or t < best[safety][0]:
                    best[safety] = (t, P)
                mark = " <- choose_splits" if P == P0 else ""
                say(f"{S:6d} {P:4d} {safety:>12s} {t:8.2f} {kv_bytes / t / 1e6:8.2f} {100 * frac:6.1f}% "
                    f"{peer / t:7.2f} {tp:8.2f} {100 * fracp:6.1f}%  max|out - SDPA| {err:.2e}{mark}")
        top = min((k for k in at_p0 if k.startswith("safe") and not k.endswith(" pdl")), key=lambda k: at_p0[k][0])
        (ts, fs), (tu, fu) = at_p0[top], at_p0["unsafe"]
        say(f"# n={S} at P={P0}: fastest safe ({top}) {100 * fs:.1f}% / unsafe {100 * fu:.1f}% of copy (target "
            f"{100 * TARGET[S]:.0f}%: safe {'met' if fs >= TARGET[S] else 'MISSED'}); safe/unsafe time "
            f"{ts / tu:.2f}; fastest P: " + ", ".join(f"{s} P={p} {t:.2f} us" for s, (t, p) in best.items()))
        say(f"# n={S} at P={P0} with PDL (the engine's step): " + ", ".join(
            f"{k[:-4]} {100 * f:.1f}%" for k, (t, f) in at_p0.items() if k.endswith(" pdl")) + " of copy")
        del ks, vs
        torch.cuda.empty_cache()
    say("# '% copy': K/V bytes / time over the copy figure; safe/unsafe time <= 1.10 is the 'within 10%' check")
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
