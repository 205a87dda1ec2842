"""Flash-decoding tuning sweep on the Qwen3-4B heads (Hq 32, Hkv 8, bf16, batch 1): decode+merge time of
candidate decode sources and compile options (positions per half-warp U, a register cap MINB) over the
split count P, at n = 640, 2048, 8192 and 32768 cached positions; the merges alone over P; torch SDPA and
the copy bandwidth measured in the same process. Timing as bench/attention_decode_gpu.py (a CUDA graph of
pairs over cache copies past twice the L2, median of replays). Every candidate binds through the
registry's safe decode / merge variants (same arguments and grid: 4 query heads per block), so only the
source and its -D options change. Output: one line per (n, P, candidate) with us, % of copy on the K/V
bytes and max|out - SDPA|; the fastest P per candidate and n; a summary for choose_splits.

    [ATTN_HQ=64] [ATTN_LENGTHS=8192,640] python3 bench/attention_decode_sweep.py OUT.txt [--quick]
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

from kreg.checker.ptx.bind import bind  # noqa: E402
from kreg.checker.ptx.compile import compile_cuda  # noqa: E402
from kreg.conformance.harness import config, open_harness, ptx_module  # noqa: E402
from kreg.conformance.speed import copy_bandwidth  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402

SAFE_DEC = "kernels/safe/attention_decode/attention_decode.cu"        # register prefetch, U = 4
TILE3_DEC = "kernels/unsafe/attention_decode/attention_decode_tile3.cu"
SAFE_MER = "kernels/safe/attention_merge/attention_merge.cu"
FAST_MER = "kernels/unsafe/attention_merge/attention_merge_fast.cu"
# (label, decode source, its -D options, merge source and its options); the 00:02 UTC run
# (bench/results/attention_decode_sweep.txt): tile-* = the cp.async kernel with NST = 2 (tile2 here)
CANDIDATES = [
    ("safe", SAFE_DEC, [], SAFE_MER),
    ("tile2", TILE3_DEC, ["-DKREG_U=4", "-DKREG_NST=2"], SAFE_MER),
    ("unsafe", TILE3_DEC, [], FAST_MER),
    ("tile3+smer", TILE3_DEC, [], SAFE_MER),
    ("tile4-u2", TILE3_DEC, ["-DKREG_U=2", "-DKREG_NST=4"], SAFE_MER),
]
LENGTHS = (8192, 640, 32768, 2048)
SPLITS = (8, 16, 24, 33, 44, 49, 66, 99, 132)
BATCHES = 15
HQ = int(os.environ.get("ATTN_HQ", 32))     # query heads (Hkv 8)


def launches(dev, cat, variant, op, module, dims, bufs, names, nsets):
    """Per cache copy, the bound launches [(kernel, config, args)] of one module through variant."""
    per_set = []
    for s in range(nsets):
        ptrs = {k: (bufs[k][s] if isinstance(bufs[k], list) else bufs[k]).data_ptr() for k in names}
        per_set.append([(module.kernel(bl.entry), config(bl), bl.args)
                        for bl in bind(variant, cat.ops[op], ptx_module(dev, module), dims, ptrs)])
    return per_set


def runner(*per_sets):
    def run(i, stream=None):
        for per_set in per_sets:
            for kernel, cfg, args in per_set[i % len(per_set)]:
                kernel.launch(cfg, *args, stream=stream)
    return run


def main(path: str, quick: bool) -> None:
    import torch
    t_start = time.time()
    dev = open_harness("gpu")
    cat = load_catalog()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bw = copy_bandwidth(dev, batches=7)
    entries = {e.op: e for e in cat.entries if e.op in ("attention_decode", "attention_merge")
               and e.variant.safety == "safe" and e.variant.types["DT"] == "bf16"}
    dec_v, mer_v = entries["attention_decode"].variant, entries["attention_merge"].variant
    mods = {}
    for label, src, opts, mer in CANDIDATES:
        for s, o in ((src, tuple(opts)), (mer, ())):
            if (s, o) not in mods:          # a merge named "path -Dopt ..." compiles with those options
                f, *mo = s.split()
                mods[(s, o)] = dev.load(compile_cuda((ROOT / f).read_text(), pathlib.Path(f).name, list(o) + mo).ptx)
    out = open(path, "w")

    def say(s=""):
        print(s, flush=True)
        out.write(s + "\n")
        out.flush()
    say(f"# attention decode+merge sweep, Hq {HQ}, Hkv {HKV} (Qwen3-0.6B 16, 4B / 8B 32, 32B 64), bf16: {torch.cuda.get_device_name(0)}, "
        f"{sms} SMs, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, copy {bw / 1e12:.2f} TB/s, "
        f"compile {time.time() - t_start:.0f} s")
    say("# candidates: " + "; ".join(f"{lb}={pathlib.Path(s).stem}{''.join(' ' + o for o in op)}+"
                                     f"{pathlib.Path(m.split()[0]).stem}{''.join(' ' + o for o in m.split()[1:])}"
                                     for lb, s, op, m in CANDIDATES))
    g = torch.Generator(device="cuda").manual_seed(0)
    lengths = tuple(int(x) for x in os.environ["ATTN_LENGTHS"].split(",")) if "ATTN_LENGTHS" in os.environ \
        else (640, 8192) if quick else LENGTHS
    best: dict = {}
    for S in lengths:
        kv_bytes = 2 * S * HKV * D * 2
        nsets = max(1, math.ceil(2 * dev.l2_bytes / kv_bytes))
        count = max(nsets, 32)
        rnd = lambda *shape: torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g)  # noqa: E731
        q = rnd(HQ, D)
        ks, vs = [rnd(S, HKV, D) for _ in range(nsets)], [rnd(S, HKV, D) for _ in range(nsets)]
        n = torch.tensor([S], device="cuda", dtype=torch.int32)
        outb = torch.empty(HQ, D, device="cuda", dtype=torch.bfloat16)
        qs = q.view(1, HQ, 1, D)
        kt = [k.permute(1, 0, 2).contiguous().unsqueeze(0) for k in ks]
        vt = [v.permute(1, 0, 2).contiguous().unsqueeze(0) for v in vs]
        peer = sdpa_us(torch, qs, kt, vt)
        want = sdpa(torch, qs, kt[0], vt[0])[0, :, 0].float()
        del kt, vt
        ideal = kv_bytes / bw * 1e6
        say(f"## n={S}: SDPA {peer:.2f} us ({100 * ideal / peer:.1f}% of copy); copy time of the K/V bytes {ideal:.2f} us")
        say(f"{'n':>6s} {'P':>4s} {'candidate':>10s} {'us':>8s} {'% copy':>7s} {'x SDPA':>7s} {'merge us':>8s} {'err':>8s}")
        for P in SPLITS:
            if quick and P not in (16, 33, 66, 132):
                continue
            o_part = torch.empty(P, HQ, D, device="cuda", dtype=torch.float32)
            lse = torch.empty(P, HQ, device="cuda", dtype=torch.float32)
            bufs = {"q": q, "k_cache": ks, "v_cache": vs, "n": n, "o_part": o_part, "lse_part": lse, "out": outb}
            dd, md = {"Hq": HQ, "Hkv": HKV, "S": S, "P": P}, {"Hq": HQ, "P": P}
            merge_us = {}
            for label, src, opts, mer in CANDIDATES:
                dec_l = launches(dev, cat, dec_v, "attention_decode", mods[(src, tuple(opts))], dd, bufs,
                                 ("q", "k_cache", "v_cache", "n", "o_part", "lse_part"), nsets)
                mer_l = launches(dev, cat, mer_v, "attention_merge", mods[(mer, ())], md, bufs,
                                 ("o_part", "lse_part", "out"), 1)
                pair = runner(dec_l, mer_l)
                outb.zero_()
                pair(0)
                torch.cuda.synchronize()
                err = (outb.float() - want).abs().max().item()
                t = graph_us(dev, pair, count, BATCHES)
                if mer not in merge_us:
                    merge_us[mer] = graph_us(dev, runner(mer_l), 64, BATCHES)
                if (S, label) not in best or t < best[(S, label)][0]:
                    best[(S, label)] = (t, P)
                say(f"{S:6d} {P:4d} {label:>10s} {t:8.2f} {100 * ideal / t:6.1f}% {peer / t:7.2f} "
                    f"{merge_us[mer]:8.2f} {err:8.1e}")
        del ks, vs
        torch.cuda.empty_cache()
    say("# fastest P per candidate and n (us, P):")
    for label, *_ in CANDIDATES:
        say(f"#  {label:>10s}: " + "  ".join(f"n={S} {best[(S, label)][0]:.2f} P={best[(S, label)][1]}"
                                            for S in lengths if (S, label) in best))
    say(f"# total {time.time() - t_start:.0f} s")
    out.close()


if __name__ == "__main__":
    main(sys.argv[1], "--quick" in sys.argv[2:])
