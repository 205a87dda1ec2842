"""Where a decode step's time goes on the GPU: the engine's decode launches (named variants, not the
store's profile) captured as CUDA graphs — the whole step, and each op's launches alone (and each gemv
shape alone) — and replayed; microseconds per step, with each gemv shape's bytes over the copy bandwidth
of the same process. The sum of the parts against the whole shows the cost of the boundaries. With
--pdl both, the whole step is timed with and without programmatic dependent launch (the launches whose
kernels wait first: plan.Launch.with_pdl), and one step's logits and token of each compared bit for bit;
each --also times the whole step (PDL on) of a modified plan (other variants, or a knob's -D define).
--fused on: the fused decode step (plan.FUSED_DECODE: 7 launches a layer; `fused:on` / `fused:off` in
an --also spec switches it for that row).

    python bench/engine_step_breakdown.py OUT [--shape 4b] [--set fast|safe] [--pos 640] [--pdl off|on|both]
        [--fused off|on] [--variants op=name,...] [--also LABEL=op:-DKNOB=V,op:variant,set:safe,fused:on ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kreg.engine import Engine
from kreg.engine import launches as L
from kreg.engine import plan as P
from kreg.engine.random_model import make_random_model, shape_config
from kreg.engine.config import load_config

SETS = {"safe": {},
        "fast": {"argmax": "argmax_bf16_vec", "attention_decode": "attention_decode_bf16_x4",
                 "attention_merge": "attention_merge_bf16_fast", "decode_advance": "decode_advance_one",
                 "embedding": "embedding_bf16_fast", "qk_norm_rope_kv": "qk_norm_rope_kv_bf16_x4",
                 "rms_norm": "rms_norm_bf16_fast"}}


def replay_us(eng, launches, reps: int = 50) -> float:
    cp = eng.dev.cp
    g = eng.dev.capture(lambda s: [ln.run(s) for ln in launches])
    for _ in range(3):
        g.replay(eng.dev.default_stream)
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    for _ in range(reps):
        g.replay(eng.dev.default_stream)
    b.record()
    b.synchronize()
    return cp.cuda.get_elapsed_time(a, b) * 1e3 / reps


def at_start(eng, pos, token=7):
    """The device's token, position and length back to (token, pos): every timing starts from the same
    state (a step's argmax overwrites the token)."""
    eng.pos, eng.device_pos = pos, None
    eng._set_position()
    eng.m.write_i32("ids", token)


def whole_step(eng, launches, pos):
    """One step's (logits, token) from pos, then the step's replay time from pos."""
    g = eng.dev.capture(lambda s: [ln.run(s) for ln in launches])
    at_start(eng, pos)
    g.replay(eng.dev.default_stream)
    eng.dev.sync()
    out = (eng.logits(), eng.token())
    at_start(eng, pos)
    return replay_us(eng, launches), out


def same(base, out):
    if base is None:
        return "no first row to compare with"
    (la, ta), (lb, tb) = base, out
    d = "logits bit-identical to the first row's" if np.array_equal(la, lb) else \
        f"max |logit - first row's| {np.abs(la - lb).max():.3g}"
    return f"{d}, token {tb} ({'same' if ta == tb else 'DIFFERENT'})"


def modified(dev, plan, spec):
    """A copy of plan with spec's changes: `set:NAME` (that set's variants), `op:VARIANT`, `op:-DNAME=V`
    (the op's variant compiled with one more define), `gemv:cfg=SxRxGxU` (the safe gemv's knobs with
    their launch geometry, as bench/gemv_sweep.py sets them; any kreg_gemv.cuh op), `fused:on|off` (the
    fused decode ops in or out), comma-separated."""
    ops = dict(plan.ops)
    for item in spec.split(","):
        op, what = item.split(":", 1)
        if op == "fused":
            ops = {k: v for k, v in ops.items() if k not in P.FUSED_DECODE}
            if what == "on":
                ops |= P.explicit(dev, "bf16", ops=P.FUSED_DECODE, optional=()).ops
        elif op == "set":
            ops |= P.explicit(dev, "bf16", SETS[what], ops=P.DECODE_OPS, optional=()).ops
        elif what.startswith(("-D", "cfg=")):
            k = ops[op]
            if what.startswith("-D"):
                v = replace(k.entry.variant, options=k.entry.variant.options + (what,))
            else:
                from gemv_sweep import configured
                v = configured(k.entry.variant, *map(int, what[4:].split("x")),
                               dim="I" if op == "rms_norm_gemv_swiglu" else "N")
            e = replace(k.entry, variant=v)
            ops[op] = replace(k, entry=e, module=P._load(dev, e, None), scratch={})
        else:
            ops |= P.explicit(dev, "bf16", {op: what}, ops=(op,), optional=()).ops
    return replace(plan, ops=ops)


def linear_launches(step, c) -> dict:
    """Each projection's launches in a step: name -> (op, launches, rows of W, K)."""
    H, I, L = c.hidden_size, c.intermediate_size, c.num_hidden_layers
    shapes = {"qkv": (c.qkv_rows, H), "o": (H, c.q_heads * 128), "gate_up": (2 * I, H), "down": (H, I),
              "lm_head": (c.vocab_size, H)}
    by = {op: [ln for ln in step if ln.op == op] for op in ("gemv", "rms_norm_gemv", "gemv_residual",
                                                             "rms_norm_gemv_swiglu", "gemv_swiglu")}
    if by["rms_norm_gemv"]:
        parts = {"qkv": ("rms_norm_gemv", by["rms_norm_gemv"][:L]), "o": ("gemv_residual", by["gemv_residual"][0::2]),
                 "gate_up": ("rms_norm_gemv_swiglu", by["rms_norm_gemv_swiglu"]),
                 "down": ("gemv_residual", by["gemv_residual"][1::2]),
                 "lm_head": ("rms_norm_gemv", by["rms_norm_gemv"][L:]) if by["rms_norm_gemv"][L:] else ("gemv", by["gemv"])}
    else:
        g, n = by["gemv"], 3 if by["gemv_swiglu"] else 4
        parts = {"qkv": ("gemv", g[0:-1:n]), "o": ("gemv", g[1:-1:n]), "gate_up": ("gemv", g[2:-1:n]),
                 "down": ("gemv_swiglu", by["gemv_swiglu"]) if n == 3 else ("gemv", g[3:-1:n]), "lm_head": ("gemv", g[-1:])}
    return {name: (op, ls, *shapes[name]) for name, (op, ls) in parts.items() if ls}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shape", default="4b")
    ap.add_argument("--set", default="fast", choices=sorted(SETS))
    ap.add_argument("--variants", default="", help="op=variant,... on top of --set")
    ap.add_argument("--pos", type=int, default=640, help="cached positions during the step")
    ap.add_argument("--pdl", default="off", choices=("off", "on", "both"))
    ap.add_argument("--fused", default="off", choices=("off", "on"), help="the fused decode step")
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=SPEC",
                    help="also time the whole step (PDL on) of a modified plan: SPEC as in modified()")
    a = ap.parse_args(argv)
    variants = dict(SETS[a.set]) | dict(kv.split("=") for kv in a.variants.split(",") if kv)
    d = Path(f"/tmp/kreg-bench-qwen3-{a.shape}")
    cfg = shape_config(a.shape)
    if not (d / "config.json").is_file() or load_config(d) != cfg:
        make_random_model(d, cfg, seed=0)
    from kreg.conformance.harness import GpuHarness
    from kreg.conformance.speed import copy_bandwidth
    gd = GpuHarness()
    bw = copy_bandwidth(gd)
    import kreg.runtime as runtime
    dev = runtime.device("gpu")
    plan = P.explicit(dev, "bf16", variants, ops=P.ENGINE_OPS,
                      optional=P.FUSED_DECODE if a.fused == "on" else ())     # other fusions: --also
    eng = Engine(d, device="gpu", plan=plan, max_seq=a.pos + 512, pdl=False)
    eng.generate(list(range(1, 129)), 2)
    eng.pos = a.pos
    eng._set_position()
    lines = [f"device: {gd.rt.describe()}; Qwen3-{a.shape} random bf16, decode step at {a.pos} cached positions"
             f"{', fused' if P.fused_decode(plan) else ''}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; copy {bw / 1e12:.2f} TB/s",
             "variants: " + ", ".join(f"{op}={k.name}" for op, k in sorted(plan.ops.items()) if op in P.decode_ops(plan))]
    plain = eng.step
    pdl = [ln.with_pdl() for ln in plain]
    base, pdl_ok = None, False
    for name, ls in ([("no PDL", plain), ("PDL", pdl)] if a.pdl == "both" else [(f"PDL {a.pdl}", pdl if a.pdl == "on" else plain)]):
        try:
            t, out = whole_step(eng, ls, a.pos)
        except Exception as e:                          # a failing row must not lose the others
            lines.append(f"whole step, {name}: failed: {type(e).__name__}: {e}")
            print(lines[-1], flush=True)
            continue
        base, pdl_ok = base or out, pdl_ok or ls is pdl
        lines.append(f"whole step, {name:6}: {t:8.1f} us  ({1e6 / t:.1f} tok/s), {len(ls)} launches, "
                     f"{sum(runtime.PDL in ln.config.attributes for ln in ls)} with the PDL attribute; {same(base, out)}")
        print(lines[-1], flush=True)
    for also in a.also:
        label, spec = also.split("=", 1)
        try:
            plan2 = modified(dev, plan, spec)
            ls = [ln.with_pdl() for ln in L.decode(plan2, eng.m, eng.P)]
            t, out = whole_step(eng, ls, a.pos)
            lines.append(f"whole step, PDL, {label} ({spec}): {t:8.1f} us  ({1e6 / t:.1f} tok/s); {same(base, out)}")
        except Exception as e:
            lines.append(f"whole step, PDL, {label} ({spec}): failed: {type(e).__name__}: {e}")
        print(lines[-1], flush=True)
        Path(a.out).write_text("\n".join(lines) + "\n")
    step = pdl if a.pdl != "off" and pdl_ok else plain
    at_start(eng, a.pos)
    parts = 0.0
    for op in dict.fromkeys(ln.op for ln in step):
        ls = [ln for ln in step if ln.op == op]
        t = replay_us(eng, ls)
        parts += t
        lines.append(f"  {op:<18} {ls[0].variant:<30} {t:8.1f} us  {len(ls):4d} launches  {t / len(ls):6.2f} us each")
    lines.append(f"  sum of ops alone: {parts:8.1f} us")
    for name, (op, ls, N, K) in linear_launches(step, eng.cfg).items():
        t = replay_us(eng, ls) / len(ls)
        lines.append(f"  {op} {name:<8} N={N:<7} K={K:<6} {t:7.2f} us each  {2 * N * K / t / 1e6 / (bw / 1e12):6.1%} of copy")
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
