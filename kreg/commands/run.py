"""`kreg run --model DIR --prompt TEXT [--profile safe-only|fastest | --lock FILE] [--max-new-tokens N] [--chat|--raw]
[--device cpu|gpu] [--json] [--profile-kernels] ...`: generate with the reference Qwen3 engine. Prints
which variant runs for each op (stderr), streams the text (stdout), then the timings (stderr); --json
prints one object instead. Exit codes: 0 done; 1 the profile cannot run (the ops without a qualifying
variant are named, with the `kreg verify` to run); 2 a bad model directory or request; 3 environment
(no GPU, no results for this device)."""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from kreg.untrusted import markup, plain


def add_parser(sub, positive_int, seed_int) -> None:
    s = sub.add_parser("run", help="generate text with the reference Qwen3 engine (verified kernels only)")
    s.add_argument("--model", required=True, help="a Hugging Face Qwen3 model directory")
    s.add_argument("--prompt", required=True)
    s.add_argument("--profile", choices=("safe-only", "fastest"), default="safe-only")
    s.add_argument("--lock", metavar="FILE", help="run exactly the variants this lock file pins (`kreg lock`)")
    s.add_argument("--max-new-tokens", type=positive_int, default=32)
    g = s.add_mutually_exclusive_group()
    g.add_argument("--chat", dest="chat", action="store_true", default=True, help="apply the chat template (default)")
    g.add_argument("--raw", dest="chat", action="store_false", help="the prompt as is, no chat template")
    s.add_argument("--no-think", action="store_true", help="the chat template with enable_thinking=False")
    s.add_argument("--system", help="a system message for the chat template")
    s.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    s.add_argument("--dtype", choices=("bf16", "f16"), help="default: the checkpoint's")
    s.add_argument("--max-seq", type=positive_int, help="KV cache positions (default: the request's, rounded up)")
    s.add_argument("--temperature", type=float, help="0: greedy; default: generation_config.json's")
    s.add_argument("--top-k", type=int)
    s.add_argument("--top-p", type=float)
    s.add_argument("--greedy", action="store_true", help="greedy decoding (the same as --temperature 0)")
    s.add_argument("--seed", type=seed_int, default=0)
    s.add_argument("--profile-kernels", action="store_true", help="time each kernel of a decode step")
    s.add_argument("--json", action="store_true")


def run_run(args, out: Console, err: Console) -> int:
    from kreg.engine import EngineError, run
    from kreg.registry.lockfile import LockError, read
    try:
        lock = read(args.lock) if args.lock else None
    except LockError as e:
        err.print(f"[red]kreg run:[/] {markup(e)}", highlight=False, markup=True)
        return 2
    # generated text comes from the model folder's vocabulary: shown with its control characters escaped
    stream = None if args.json else (lambda t: (sys.stdout.write(plain(t, lines=True)), sys.stdout.flush()))
    try:
        r = run(args.model, args.prompt, device=args.device, profile=args.profile,
                max_new_tokens=args.max_new_tokens, chat=args.chat, enable_thinking=not args.no_think,
                system=args.system, temperature=0.0 if args.greedy else args.temperature, top_k=args.top_k,
                top_p=args.top_p, seed=args.seed, max_seq=args.max_seq, dtype=args.dtype,
                profile_kernels=args.profile_kernels, on_text=stream, lock=lock,
                on_ready=None if args.json else (lambda eng: _variants(err, eng)))
    except EngineError as e:
        err.print(f"[red]kreg run:[/] {markup(e)}", highlight=False, markup=True)    # it may quote a path
        return e.exit_code
    except ValueError as e:
        err.print(f"[red]kreg run:[/] {markup(e)}", highlight=False)
        return 2
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print()
    tps = f"{r['decode_tok_s']:.2f} tok/s" if r["decode_tok_s"] else "-"
    err.print(f"{r['generated_tokens']} tokens ({r['stopped']}) after a {r['prompt_tokens']}-token prompt on "
              f"{r['device']}: prefill {r['prefill_s']:.3f} s, decode {tps}", highlight=False, markup=False)
    if "kernel_profile" in r:
        t = Table(title="decode step, per kernel")
        for c in ("op", "variant", "entry", "launches", "us/step"):
            t.add_column(c)
        for k in sorted(r["kernel_profile"], key=lambda k: -k["us_per_step"]):
            t.add_row(markup(k["op"]), markup(k["variant"]), markup(k["entry"]), str(k["launches_per_step"]),
                      f"{k['us_per_step']:.1f}")
        err.print(t)
    return 0


def _variants(err: Console, eng) -> None:
    err.print(plain(f"profile {eng.plan.profile} on {eng.dev.describe()} ({eng.dtype}):"), highlight=False, markup=False)
    for v in eng.plan.report():
        err.print(plain(f"  {v['op']:<22} {v['variant']:<32} {v['safety']:<7} ptx {v['ptx_sha256'][:12]}"
                        + ("  PDL" if v["pdl"] else "")), highlight=False, markup=False)
        for d in v["by_dims"]:
            dims = " ".join(f"{k}={n}" for k, n in d["dims"].items())
            err.print(plain(f"    at {dims}: {d['variant']} {d['safety']} ptx {d['ptx_sha256'][:12]}"), highlight=False,
                      markup=False)
