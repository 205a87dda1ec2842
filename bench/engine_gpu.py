"""Qwen3 decode throughput on the GPU: kreg's engine (fastest and safe-only profiles) against a
torch.compile static-cache peer (gpt-fast style, CUDA graphs), Hugging Face generate, and the HBM
roofline (weight bytes per token over the device-to-device copy bandwidth measured in the same run).
Random bf16 weights of a Qwen3 shape (default 4B), a 128-token prompt, 512 new tokens, greedy, EOS
ignored; the median of --runs runs per row. Each row is written to OUT as it finishes.

    python bench/engine_gpu.py OUT [--shape 4b] [--rows kreg,torch,hf,prefill] [--runs 3] [--model-dir DIR]
        [--profiles fastest,safe-only] [--prefill-len 2048,8192]
    python bench/engine_gpu.py OUT --shape 32b --rows kreg --profiles safe-only     # no folder: made on demand
    python bench/engine_gpu.py OUT --device cpu --shape tiny --new 4 --rows kreg     # smoke test

Rows for the issue's table: `--shape 0.6b` and `--shape 8b` (the 8B target is 160 tok/s), an 8192-token
context `--prompt-len 8192` (decoding from 8192 cached positions on), and `--rows prefill`: one pass over
a --prefill-len (2048; a comma list runs each) token prompt, kreg's engine (the --profiles, default both) against
eager PyTorch with the same weights (cuBLAS through F.linear, scaled_dot_product_attention), prompt tokens per
second. `--shape 32b` (65.5 GB of bf16) runs without a folder: the weights are made on demand, tensor by
tensor (engine/random_model.py's RandomCheckpoint, the bits a folder of the same seed holds), for the engine
and the torch peers alike (`--no-disk` asks for that at any shape). `--yarn 4 --prompt-len 32768
--prefill-len 32768 --rows kreg,prefill` runs the Qwen3 model cards' long-context recipe (YaRN, factor 4
over 32768, max_position_embeddings 131072) with a 32768-token prompt.

Each kreg decode row prints what bounds its step: per kernel group (the per-kernel profile, each group
replayed in a graph of its own) the bytes it must move per step, the share of the copy bandwidth its time
achieves and its time above the copy-rate time, and the launch floor (launches x the shortest per-launch time).
Each prefill row prints its kernels of one more pass (CUDA events around each kreg launch; torch.profiler's
device time per kernel for the eager peer) summed per class, gemm, attention and other, kreg against torch.

The kreg rows need verify results for this GPU in $KREG_HOME (`kreg verify --device gpu`); a row that
cannot run is written with its reason."""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from kreg.engine import Engine, EngineError, Sampling
from kreg.engine import kernel_profile as KP
from kreg.conformance.rope import Yarn, rope_tables
from kreg.engine.config import load_config
from kreg.engine.random_model import RandomCheckpoint, make_random_model, shape_config
from kreg.engine.weights import Checkpoint


class Report:
    def __init__(self, path):
        self.path, self.lines = Path(path), []

    def row(self, text: str) -> None:
        print(text, flush=True)
        self.lines.append(text)
        self.path.write_text("\n".join(self.lines) + "\n")


class Model:
    """The model every row runs: a folder (folder), or random weights of cfg made on demand tensor by
    tensor (engine/random_model.py's RandomCheckpoint: the bits of make_random_model's folder of the same
    seed, nothing on disk), for the engine and the torch peers alike."""

    def __init__(self, cfg, folder: Path | None = None, seed: int = 0):
        self.cfg, self.folder, self.seed = cfg, folder, seed

    def checkpoint(self):
        return Checkpoint(self.folder) if self.folder else RandomCheckpoint(self.cfg, self.seed)

    def engine(self, **kw) -> Engine:
        return Engine(self.folder, **kw) if self.folder else Engine(checkpoint=self.checkpoint(), **kw)

    def __str__(self) -> str:
        return str(self.folder) if self.folder else f"random weights made on demand (seed {self.seed}, no folder)"


def bench_config(args):
    """--shape's config, with --yarn the Qwen3 model cards' long-context recipe (rope_scaling yarn,
    factor over an original context of 32768, max_position_embeddings factor x 32768)."""
    if not args.yarn:
        return shape_config(args.shape)
    return shape_config(args.shape, yarn=Yarn(factor=args.yarn, original_max_position_embeddings=32768),
                        max_position_embeddings=int(args.yarn * 32768))


def bench_model(args) -> Model:
    """--model-dir as given (a real model, or one made before); else a random model of --shape: without
    a folder with --no-disk, with --yarn (the weights are the plain shape's: no second folder), or where
    the folder would not fit the free space of /tmp (a random 32B is 65.5 GB); else in a scratch folder
    of this script's own, made (or remade) when its config differs."""
    if args.model_dir:
        d = Path(args.model_dir)
        return Model(load_config(d), d)
    cfg = bench_config(args)
    d = Path(f"/tmp/kreg-bench-qwen3-{args.shape}")
    fresh = (d / "config.json").is_file() and load_config(d) == cfg
    if args.no_disk or args.yarn or not fresh and shutil.disk_usage("/tmp").free < weight_bytes(cfg) + (4 << 30):
        return Model(cfg)
    if not fresh:
        t = time.perf_counter()
        make_random_model(d, cfg, seed=0)
        print(f"wrote random Qwen3-{args.shape} weights to {d} in {time.perf_counter() - t:.1f} s", flush=True)
    return Model(cfg, d)


def weight_bytes(cfg) -> int:
    """Bytes read per decoded token: every layer's weights, the final norm, the lm_head (the embedding
    row is negligible)."""
    H, I, D = cfg.hidden_size, cfg.intermediate_size, cfg.head_dim
    layer = (cfg.qkv_rows * H + H * cfg.q_heads * D + 2 * I * H + H * I + 2 * D + 2 * H) * 2
    return cfg.num_hidden_layers * layer + (cfg.vocab_size * H + H) * 2


def kreg_row(m, profile, prompt, new, runs, device, pdl=True):
    eng = m.engine(device=device, profile=profile, max_seq=len(prompt) + new + 64, pdl=pdl)  # room to profile after
    rates = []
    for _ in range(runs):
        g = eng.generate(prompt, new, Sampling(), eos=())
        rates.append(g.decode_tok_s)
    try:                       # the per-kernel profile is extra: the row stands without it
        kp = eng.kernel_profile() if device == "gpu" else []
        if kp:                 # the measured step beside it (engine/kernel_profile.py: they should agree)
            kp.append({"op": "(measured step)", "variant": "graph replay", "entry": "", "launches_per_step": len(eng.step),
                       "us_per_step": 1e6 * eng.step_seconds(), "measured": True})
    except EngineError as e:
        print(f"kernel profile of {profile} not taken: {e}", file=sys.stderr)
        kp = []
    try:                       # the bytes per kernel group are extra too
        nbytes = KP.step_bytes(eng) if kp else {}
    except Exception as e:
        print(f"step bytes of {profile} not taken: {type(e).__name__}: {e}", file=sys.stderr)
        nbytes = {}
    return statistics.median(rates), rates, eng.plan.report(), kp, g.tokens, nbytes


def bound_rows(kp, nbytes, step_us, bw) -> list[str]:
    """What bounds the decode step, from the per-kernel profile: per (op, variant), its time, the bytes it
    must move per step (engine/kernel_profile.py's step_bytes) and the share of the copy bandwidth that
    time achieves, the time above its copy-rate time; the launch floor (launches per step x the shortest
    per-launch time measured); the step's bytes at the copy bandwidth against the measured step."""
    by: dict[tuple, list] = {}
    for k in kp:
        t = by.setdefault((k["op"], k["variant"]), [0.0, 0])
        t[0] += k["us_per_step"]
        t[1] += k["launches_per_step"]
    rows, above = [], []
    for (op, v), (us, n) in sorted(by.items(), key=lambda kv: -kv[1][0]):
        b = nbytes.get((op, v), 0)
        copy_us = 1e6 * b / bw
        above.append((us - copy_us, op))
        rows.append(f"  {op:<20} {v:<30} {us:8.1f} us/step ({n} launches) = {copy_us / us:4.0%} of copy bandwidth "
                    f"({b / 1e6:.1f} MB, {b / us / 1e6:.2f} TB/s; {us - copy_us:.1f} us above its copy-rate time)")
    launches = sum(n for _, n in by.values())
    per, op_min = min((us / n, op) for (op, _), (us, n) in by.items())
    floor, total = launches * per, sum(nbytes.values())
    rows.append(f"  launch floor: {launches} launches x {per:.2f} us (the shortest per-launch time, {op_min}) = "
                f"{floor:.1f} us/step ({floor / step_us:.0%} of the measured step)")
    rows.append(f"  the step moves {total / 1e9:.3f} GB: {1e6 * total / bw:.1f} us at the copy bandwidth, "
                f"{1e6 * total / bw / step_us:.0%} of the measured {step_us:.1f} us; most time above the copy rate: "
                + ", ".join(f"{op} {t:.1f} us" for t, op in sorted(above, reverse=True)[:3]))
    return rows


def torch_peer_row(m, prompt, new, runs):
    """A gpt-fast-style Qwen3 decode step in PyTorch: static KV cache, token and position on the device,
    torch.compile(mode="reduce-overhead") (CUDA graphs); the engine's RoPE tables (YaRN's where scaled)."""
    import torch
    import torch.nn.functional as F
    from kreg.engine.weights import load_globals, load_layer
    dev, S, cfg = "cuda", len(prompt) + new, m.cfg
    ck = m.checkpoint()
    tt = lambda b: torch.from_numpy(np.ascontiguousarray(b).view(np.int16)).view(torch.bfloat16).to(dev)  # noqa
    g = {k: tt(v) for k, v in load_globals(ck, cfg, "bf16").items()}
    L = [{k: tt(v) for k, v in load_layer(ck, cfg, i, "bf16").items()} for i in range(cfg.num_hidden_layers)]
    Hq, Hkv, D, eps = cfg.q_heads, cfg.kv_heads, 128, cfg.rms_norm_eps
    kc = torch.zeros(len(L), S, Hkv, D, dtype=torch.bfloat16, device=dev)
    vc = torch.zeros_like(kc)
    cos, sin = (torch.from_numpy(t.astype(np.float32)).to(dev)
                for t in rope_tables(S, cfg.rope_theta, yarn=cfg.yarn, scaling=cfg.scaling))
    ar = torch.arange(S, device=dev)

    def rms(x, w):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

    def rope(x, c, s):
        x1, x2 = x[..., :D // 2].float(), x[..., D // 2:].float()
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(x.dtype)

    def step(tok, pos):
        x = g["embed"][tok]                                           # [1, H]
        c, s = cos[pos], sin[pos]
        mask = (ar <= pos)[None, None, :]
        for i, w in enumerate(L):
            h = rms(x, w["in_norm"])
            qkv = (h @ w["qkv"].T).view(Hq + 2 * Hkv, D)
            q = rope(rms(qkv[:Hq], w["q_norm"]), c, s)
            k = rope(rms(qkv[Hq:Hq + Hkv], w["k_norm"]), c, s)
            kc[i].index_copy_(0, pos, k[None])
            vc[i].index_copy_(0, pos, qkv[Hq + Hkv:][None])
            qg = q.view(Hkv, Hq // Hkv, D).float()                    # GQA: the query heads of each kv head
            s_ = torch.einsum("hgd,shd->hgs", qg, kc[i].float()) * D ** -0.5
            p_ = torch.softmax(s_.masked_fill(~mask, float("-inf")), dim=-1)
            o = torch.einsum("hgs,shd->hgd", p_, vc[i].float()).to(torch.bfloat16)
            x = x + o.reshape(1, Hq * D) @ w["o"].T
            gu = rms(x, w["post_norm"]) @ w["gate_up"].T
            x = x + (F.silu(gu[:, :cfg.kernel_intermediate]) * gu[:, cfg.kernel_intermediate:]) @ w["down"].T
        return (rms(x, g["norm"]) @ g["lm_head"].T).argmax(-1)

    # as gpt-fast's module buffers and HF's StaticCache: the weights and caches keep their addresses, so
    # the CUDA graphs of mode="reduce-overhead" may mutate the caches in place and copy no weights
    for t in (kc, vc, cos, sin, ar, *g.values(), *(t for w in L for t in w.values())):
        torch._dynamo.mark_static_address(t)
    skipped = _watch_cudagraph_skips(torch)
    cstep = torch.compile(step, mode="reduce-overhead", fullgraph=True)
    rates = []
    with torch.no_grad():
        for r in range(runs + 1):                                     # the first run compiles
            for p, t in enumerate(prompt):
                nxt = cstep(torch.tensor([t], device=dev), torch.tensor([p], device=dev))
            tok, pos = nxt.clone(), torch.tensor([len(prompt)], device=dev)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(new - 1):
                tok = cstep(tok, pos).clone()
                pos += 1
            torch.cuda.synchronize()
            if r:
                rates.append((new - 1) / (time.perf_counter() - t0))
    return statistics.median(rates), rates, ("CUDA graphs skipped: " + "; ".join(sorted(set(skipped)))
                                             if skipped else "CUDA graphs used")


def _watch_cudagraph_skips(torch) -> list[str]:
    """The reasons torch.compile gives (its perf hints) for running a function without CUDA graphs."""
    import logging
    skipped: list[str] = []

    class Hint(logging.Handler):
        def emit(self, rec):
            msg = rec.getMessage()
            if "skipping cudagraphs" in msg:
                skipped.append(msg.split("skipping cudagraphs due to", 1)[-1].strip()[:160])

    torch._logging.set_logs(perf_hints=True)
    logging.getLogger("torch").addHandler(Hint())
    return skipped


def kreg_prefill_row(m, profile, prompt, runs):
    """Prompt tokens per second of the engine's prefill (its chunks of at most prefill_chunk tokens)."""
    eng = m.engine(device="gpu", profile=profile, max_seq=len(prompt) + 64)
    times = []
    for r in range(runs + 1):                         # the first run warms up
        eng.pos = 0
        eng.dev.sync()
        t0 = time.perf_counter()
        for lo in range(0, len(prompt), eng.prefill_chunk):
            eng.prefill(prompt[lo:lo + eng.prefill_chunk])
        eng.dev.sync()
        if r:
            times.append(time.perf_counter() - t0)
    tok = eng.token()
    return len(prompt) / statistics.median(times), tok, prefill_kernel_seconds(eng, prompt)


def prefill_kernel_seconds(eng, prompt) -> dict[tuple[str, str], float]:
    """Seconds per (op, variant) of one more prefill of the prompt: CUDA events around each launch (a
    prefill's kernels take 10 us to ms each, against a few us of launch cost)."""
    from kreg.engine import launches as L
    cp, s, out = eng.dev.cp, eng.dev.default_stream, {}
    eng.pos = 0
    for lo in range(0, len(prompt), eng.prefill_chunk):
        ids = prompt[lo:lo + eng.prefill_chunk]
        eng.m.act("pf.ids", len(ids), "i32").copy_from(np.asarray(ids, dtype=np.int32))
        marks = []
        for ln in L.prefill(eng.plan, eng.m, len(ids), eng.pos, False):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(s.handle)
            ln.run()
            b.record(s.handle)
            marks.append((ln.op, ln.variant, a, b))
        marks[-1][3].synchronize()
        for op, v, a, b in marks:
            out[(op, v)] = out.get((op, v), 0.0) + cp.cuda.get_elapsed_time(a, b) / 1e3
        eng.pos += len(ids)
    return out


PREFILL_CLASSES = (("attention", ("flash", "fmha", "attention", "efficient", "sdpa")),     # first: cuDNN's flash
                   ("gemm", ("gemm", "gemv", "xmma", "cutlass", "nvjet", "cublas", "sm90_", "wgmma")))   # kernel is a wgmma


def prefill_class(name: str) -> str:
    """gemm, attention or other (norms, RoPE, element-wise, the embedding) for a kreg op or a CUDA kernel name."""
    n = name.lower()
    return next((c for c, keys in PREFILL_CLASSES if any(k in n for k in keys)), "other")


def torch_prefill_row(m, prompt, runs):
    """The same prefill in eager PyTorch: cuBLAS GEMMs through F.linear, causal GQA attention through
    F.scaled_dot_product_attention (flash / memory-efficient kernels), the same bf16 weights and RoPE
    tables (YaRN's where scaled), in one pass."""
    import torch
    import torch.nn.functional as F
    from kreg.engine.weights import load_globals, load_layer
    dev, T, cfg = "cuda", len(prompt), m.cfg
    ck = m.checkpoint()
    tt = lambda b: torch.from_numpy(np.ascontiguousarray(b).view(np.int16)).view(torch.bfloat16).to(dev)  # noqa
    g = {k: tt(v) for k, v in load_globals(ck, cfg, "bf16").items()}
    L = [{k: tt(v) for k, v in load_layer(ck, cfg, i, "bf16").items()} for i in range(cfg.num_hidden_layers)]
    Hq, Hkv, D, eps, I = cfg.q_heads, cfg.kv_heads, 128, cfg.rms_norm_eps, cfg.kernel_intermediate
    cos, sin = (torch.from_numpy(t.astype(np.float32)).to(dev)[:, None]          # [T, 1, D/2]
                for t in rope_tables(T, cfg.rope_theta, yarn=cfg.yarn, scaling=cfg.scaling))
    ids = torch.tensor(prompt, device=dev)

    def rms(x, w):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

    def rope(x):
        x1, x2 = x[..., :D // 2].float(), x[..., D // 2:].float()
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).to(x.dtype)

    from torch.nn.attention import SDPBackend, sdpa_kernel
    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
    gqa = [True]

    def attend(q, k, v):
        """Causal SDPA on a fused kernel only (the math fallback's [Hq, T, T] scores do not fit at T = 32768):
        GQA by enable_gqa where a fused kernel takes it, else K and V repeated per query head."""
        with sdpa_kernel(fused):
            if gqa[0]:
                try:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                except RuntimeError:
                    gqa[0] = False
            r = Hq // Hkv
            return F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), is_causal=True)

    def forward():
        x = g["embed"][ids]                                                     # [T, H]
        for w in L:
            qkv = F.linear(rms(x, w["in_norm"]), w["qkv"]).view(T, Hq + 2 * Hkv, D)
            q = rope(rms(qkv[:, :Hq], w["q_norm"])).transpose(0, 1)             # [Hq, T, D]
            k = rope(rms(qkv[:, Hq:Hq + Hkv], w["k_norm"])).transpose(0, 1)
            v = qkv[:, Hq + Hkv:].transpose(0, 1)
            o = attend(q[None], k[None], v[None])
            x = x + F.linear(o[0].transpose(0, 1).reshape(T, Hq * D), w["o"])
            gu = F.linear(rms(x, w["post_norm"]), w["gate_up"])
            x = x + F.linear(F.silu(gu[:, :I]) * gu[:, I:], w["down"])
        return F.linear(rms(x[-1:], g["norm"]), g["lm_head"]).argmax(-1)

    times = []
    with torch.no_grad():
        for r in range(runs + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            tok = forward()
            torch.cuda.synchronize()
            if r:
                times.append(time.perf_counter() - t0)
        kernels = torch_kernel_seconds(torch, forward)
    return (T / statistics.median(times), int(tok.item()), "GQA by enable_gqa" if gqa[0] else "K/V repeated per query head",
            kernels)


def torch_kernel_seconds(torch, fn) -> dict[str, float]:
    """Seconds per CUDA kernel name of one fn() under torch.profiler (device time of each kernel)."""
    from torch.profiler import ProfilerActivity, profile
    try:                      # the breakdown is extra: the row stands without it
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
    except Exception as e:
        print(f"torch.profiler not taken: {type(e).__name__}: {e}", file=sys.stderr)
        return {}
    out: dict[str, float] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            out[e.name] = out.get(e.name, 0.0) + e.time_range.elapsed_us() / 1e6        # the kernel's span, us
    return out


def hf_row(m, prompt, new, runs):
    """Hugging Face generate end to end (prefill included), loaded straight to the GPU; eager."""
    import torch
    import transformers
    if m.folder is None:
        raise ImportError("Hugging Face loads a model folder, and this run has none (random weights made on demand)")
    d = m.folder
    try:
        m = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, device_map="cuda")
    except TypeError:                                   # transformers before `dtype=`
        m = transformers.AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.bfloat16, device_map="cuda")
    m = m.eval()
    ids = torch.tensor([prompt], device="cuda")
    rates = []
    with torch.no_grad():
        m.generate(ids, max_new_tokens=8, min_new_tokens=8, do_sample=False)        # warm-up
        for r in range(1, runs + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            m.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)
            torch.cuda.synchronize()
            if r:
                rates.append(new / (time.perf_counter() - t0))
    return statistics.median(rates), rates


def free_cupy_pool() -> None:
    """Hand CuPy's cached blocks back before torch allocates."""
    import gc
    import cupy
    gc.collect()
    cupy.get_default_memory_pool().free_all_blocks()


def prefill_rows(rep, m, n, profiles, runs) -> None:
    """The prefill rows at an n-token prompt: kreg's engine per profile, then eager torch beside them."""
    cfg = m.cfg
    prompt = [int(t) for t in np.random.default_rng(1).integers(0, min(cfg.vocab_size, 150000), n)]
    tokens, rates, kernels = {}, {}, {}
    for profile in profiles:
        try:
            rates[profile], tokens[profile], kernels[profile] = kreg_prefill_row(m, profile, prompt, runs)
            rep.row(f"kreg {profile} prefill of {n} tokens: {rates[profile]:.0f} tok/s")
        except EngineError as e:
            rep.row(f"kreg {profile} prefill of {n} tokens: not run: {e}".replace("\n", " "))
        except Exception as e:
            rep.row(f"kreg {profile} prefill of {n} tokens: failed: {type(e).__name__}: {e}")
            traceback.print_exc()
    free_cupy_pool()
    try:
        rate, tok, how, peer = torch_prefill_row(m, prompt, runs)
        ratios = "; ".join(f"kreg {p} {rates[p] / rate:.2f}x, {'same' if t == tok else 'another'} next token"
                           for p, t in tokens.items())
        rep.row(f"torch eager prefill (cuBLAS F.linear + SDPA, {how}) of {n} tokens: {rate:.0f} tok/s"
                + (f" ({ratios})" if ratios else ""))
        for p, ks in kernels.items() if peer else ():
            for line in prefill_kernel_rows(p, ks, peer):
                rep.row(line)
    except Exception as e:
        rep.row(f"torch eager prefill of {n} tokens: failed: {type(e).__name__}: {e}")
        traceback.print_exc()


def prefill_kernel_rows(profile, kreg: dict, peer: dict) -> list[str]:
    """kreg's prefill kernels (per op and variant) against the eager peer's (per CUDA kernel name), one pass
    each, summed per class (gemm, attention, other): which kernels a ratio comes from."""
    rows = [f"  prefill kernels, one pass (CUDA events per kreg launch; torch.profiler for the peer), kreg {profile}:"]
    for cls in ("gemm", "attention", "other"):
        ks = {k: t for k, t in kreg.items() if prefill_class(k[0]) == cls}
        ps = {k: t for k, t in peer.items() if prefill_class(k) == cls}
        a, b = sum(ks.values()), sum(ps.values())
        top = lambda d, name: ", ".join(f"{name(k)} {1e3 * t:.2f} ms" for k, t in sorted(d.items(), key=lambda kv: -kv[1])[:3])  # noqa: E731
        rows.append(f"    {cls:<9} kreg {1e3 * a:8.2f} ms, torch {1e3 * b:8.2f} ms"
                    + (f" (kreg/torch {a / b:.2f}x)" if a and b else "")
                    + f"; kreg: {top(ks, lambda k: f'{k[0]} {k[1]}') or '-'}; torch: {top(ps, lambda k: k[:60]) or '-'}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--shape", default="4b")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new", type=int, default=512)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", default="kreg,torch,hf", help="any of kreg, kreg-nopdl (with kreg), torch, hf, prefill")
    ap.add_argument("--prefill-len", default="2048", help="prompt length of the prefill rows; a comma list runs each")
    ap.add_argument("--profiles", default="fastest,safe-only", help="the kreg profiles of the kreg and prefill rows")
    ap.add_argument("--hf-new", type=int, default=128, help="new tokens of the HF row (eager HF is slow)")
    ap.add_argument("--hf-runs", type=int, default=1)
    ap.add_argument("--model-dir")
    ap.add_argument("--no-disk", action="store_true",
                    help="random weights made on demand, no folder written (automatic where the folder would not fit)")
    ap.add_argument("--yarn", type=float, metavar="FACTOR",
                    help="YaRN RoPE scaling by FACTOR over an original context of 32768 (the Qwen3 model cards' "
                         "recipe: --yarn 4 serves 131072 positions); made without a folder")
    ap.add_argument("--torch-max-prompt", type=int, default=4096,
                    help="the longest prompt the torch.compile decode peer fills its cache for (one step a token)")
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    a = ap.parse_args(argv)
    rep = Report(a.out)
    m = bench_model(a)
    cfg = m.cfg
    prompt = [int(t) for t in np.random.default_rng(0).integers(0, min(cfg.vocab_size, 150000), a.prompt_len)]
    rows, profiles = a.rows.split(","), a.profiles.split(",")
    if a.device == "gpu":
        from kreg.conformance.harness import GpuHarness
        from kreg.conformance.speed import copy_bandwidth
        gd = GpuHarness()
        bw = copy_bandwidth(gd)
        wb = weight_bytes(cfg)
        yarn = f", YaRN x{cfg.yarn.factor:g} over {cfg.yarn.original_max_position_embeddings}" if cfg.yarn else ""
        rep.row(f"device: {gd.rt.describe()}; {m} ({cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}{yarn}), "
                f"bf16, {a.prompt_len}-token prompt, {a.new} new tokens, greedy, median of {a.runs} runs")
        rep.row(f"HBM roofline: {wb / 1e9:.2f} GB of weights per token / {bw / 1e12:.2f} TB/s copy bandwidth = "
                f"{bw / wb:.1f} tok/s")
    tokens = {}
    if "kreg" in rows:
        for profile in profiles:
            try:
                med, rates, variants, kp, tokens[profile], nbytes = kreg_row(m, profile, prompt, a.new, a.runs,
                                                                             a.device)
                rep.row(f"kreg {profile}: {med:.1f} tok/s (runs {', '.join(f'{r:.1f}' for r in rates)})")
                rep.row("  variants: " + ", ".join(f"{v['op']}={v['variant']}" + ("+PDL" if v["pdl"] else "")
                                                   for v in variants))
                for v in variants:
                    for o in v["by_dims"]:
                        rep.row(f"  at {v['op']} {o['dims']}: {o['variant']} ({o['why']})")
                step = [k for k in kp if k.get("measured")]
                kp = [k for k in kp if not k.get("measured")]
                if step:
                    total = sum(k["us_per_step"] for k in kp)
                    rep.row(f"  per-kernel profile (each kernel group in a graph of its own): sum {total:.1f} us/step, "
                            f"measured step {step[0]['us_per_step']:.1f} us ({total / step[0]['us_per_step']:.3f}x)")
                    for line in bound_rows(kp, nbytes, step[0]["us_per_step"], bw):
                        rep.row(line)
            except EngineError as e:
                rep.row(f"kreg {profile}: not run: {e}".replace("\n", " "))
            except Exception as e:                   # a failing row must not lose the others
                rep.row(f"kreg {profile}: failed: {type(e).__name__}: {e}")
                traceback.print_exc()
        if "kreg-nopdl" in rows and "fastest" in profiles:
            try:
                med, rates, *_ = kreg_row(m, "fastest", prompt, a.new, a.runs, a.device, pdl=False)
                rep.row(f"kreg fastest without PDL: {med:.1f} tok/s (runs {', '.join(f'{r:.1f}' for r in rates)})")
            except Exception as e:
                rep.row(f"kreg fastest without PDL: failed: {type(e).__name__}: {e}".replace("\n", " "))
        if len(tokens) == 2:
            same = next((i for i, (x, y) in enumerate(zip(tokens["fastest"], tokens["safe-only"])) if x != y), None)
            rep.row("greedy tokens of fastest and safe-only: " + ("identical" if same is None else
                                                                  f"first differ at step {same}"))
    if a.device == "gpu" and "prefill" in rows:
        for n in (int(x) for x in a.prefill_len.split(",")):
            prefill_rows(rep, m, n, profiles, a.runs)
            free_cupy_pool()
    if a.device == "gpu":
        free_cupy_pool()
    for name, fn in (("torch", lambda: torch_peer_row(m, prompt, a.new, a.runs)),
                     ("hf", lambda: hf_row(m, prompt, a.hf_new, a.hf_runs))):
        if name not in rows or a.device != "gpu":
            continue
        if name == "torch" and a.prompt_len > a.torch_max_prompt:
            rep.row(f"torch.compile static-cache peer: not run: it fills its KV cache one decode step a token "
                    f"({a.prompt_len} steps per run; --torch-max-prompt {a.torch_max_prompt})")
            continue
        label = {"torch": "torch.compile static-cache peer",
                 "hf": f"HF generate (eager, end to end incl. prefill, {a.hf_new} new tokens, {a.hf_runs} runs)"}[name]
        try:
            med, rates, *how = fn()
            rep.row(f"{label}: {med:.1f} tok/s (runs {', '.join(f'{r:.1f}' for r in rates)})"
                    + "".join(f"; {h}" for h in how))
        except ImportError as e:
            rep.row(f"{label}: not run: {e}")
        except Exception as e:                       # a peer failing must not lose the other rows
            rep.row(f"{label}: failed: {type(e).__name__}: {e}")
            traceback.print_exc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
