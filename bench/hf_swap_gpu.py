"""Decode tokens/s of a Hugging Face transformers Qwen3 model three ways on the same random weights: plain
transformers eager, transformers with torch.compile (generate's static cache, which compiles the decode
step with mode="reduce-overhead", CUDA graphs), and with its layers swapped for kreg ops
(kreg.torch.qwen3.swap, the safe-only profile, transformers' dynamic cache, eager). Batch 1, greedy, EOS
ignored; decode rate = N / (time of generate(1 + N new tokens) - time of generate(1 new token)), so the
prompt's prefill is not counted; the median of --runs. Each row is written to OUT as it finishes.

    python bench/hf_swap_gpu.py OUT [--shape 4b] [--layers 8] [--prompt-len 128] [--new 128] [--runs 3]
        [--rows eager,compile,kreg] [--model-dir DIR]

The kreg row needs verify results for this GPU in $KREG_HOME (`kreg verify --device gpu`): a variant the
profile does not qualify is an error, never a fallback (a row that cannot run is written with its reason)."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback
from pathlib import Path


from engine_gpu import Report     # this folder is on sys.path when a bench runs as a script


def model_dir(shape: str, layers: int | None, given: str | None) -> Path:
    """--model-dir as given, else a random Qwen3 of the shape (and layer count) in a scratch folder, made
    when missing or when its config differs (seed 0, as bench/engine_gpu.py's)."""
    from kreg.engine.config import load_config
    from kreg.engine.random_model import make_random_model, shape_config
    if given:
        return Path(given)
    cfg = shape_config(shape, **({"num_hidden_layers": layers} if layers else {}))
    d = Path(f"/tmp/kreg-bench-qwen3-{shape}" + (f"-{layers}l" if layers else ""))
    if not (d / "config.json").is_file() or load_config(d) != cfg:
        make_random_model(d, cfg, seed=0)
    return d


def load(d: Path):
    import torch
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, device_map="cuda").eval()


def decode_rate(m, ids, new: int, runs: int, **gen) -> tuple[float, list[float]]:
    """Median decode tokens/s of m.generate over runs, after two warm-ups at the timed lengths (which compile
    and capture where gen asks it)."""
    import torch

    def timed(n: int) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = m.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, **gen)
        torch.cuda.synchronize()
        assert out.shape[1] == ids.shape[1] + n
        return time.perf_counter() - t0

    with torch.no_grad():
        for n in (1, 1 + new, 1, 1 + new):     # warm-up at the timed lengths (a static cache is sized by them)
            timed(n)
        rates = []
        for _ in range(runs):
            one = timed(1)
            rates.append(new / (timed(1 + new) - one))
    return statistics.median(rates), rates


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--shape", default="4b")
    ap.add_argument("--layers", type=int, help="layers of the random model (default: the shape's)")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", default="eager,compile,kreg")
    ap.add_argument("--model-dir")
    a = ap.parse_args(argv)
    import numpy as np
    import torch
    import transformers
    from kreg.engine.config import load_config
    rep = Report(a.out)
    d = model_dir(a.shape, a.layers, a.model_dir)
    cfg = load_config(d)
    prompt = np.random.default_rng(0).integers(0, min(cfg.vocab_size, 150000), a.prompt_len)
    ids = torch.tensor([prompt.tolist()], device="cuda")
    rep.row(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}, transformers {transformers.__version__}; "
            f"{d} ({cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, intermediate {cfg.intermediate_size}, "
            f"{cfg.num_attention_heads}/{cfg.num_key_value_heads} heads), bf16, batch 1, {a.prompt_len}-token prompt, "
            f"{a.new} new tokens, greedy, median of {a.runs} runs")
    tokens = {}
    for row in a.rows.split(","):
        label = {"eager": "transformers eager (dynamic cache)",
                 "compile": "transformers torch.compile (static cache, mode reduce-overhead)",
                 "kreg": "transformers with kreg ops swapped in (kreg.torch.qwen3.swap, safe-only, dynamic cache)"}[row]
        try:
            m = load(d)
            gen = {"disable_compile": True}
            if row == "compile":
                torch._dynamo.reset()
                gen = {"cache_implementation": "static"}
            elif row == "kreg":
                import kreg.torch as kt
                from kreg.torch import qwen3
                kt.use_profile("safe-only")
                qwen3.swap(m)
            t0 = time.perf_counter()
            med, rates = decode_rate(m, ids, a.new, a.runs, **gen)
            took = time.perf_counter() - t0
            with torch.no_grad():
                tokens[row] = m.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                                         **gen)[0, ids.shape[1]:].tolist()
            extra = ""
            if row == "compile":
                frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
                extra = f"; {frames} graphs compiled" if frames else "; NOT compiled (generate ran eager)"
            if row == "kreg":
                extra = "; " + "; ".join(f"{o['op']}={o['variant']}" for o in kt.explain())
            rep.row(f"{label}: {med:.1f} tok/s (runs {', '.join(f'{r:.1f}' for r in rates)}; {took:.0f} s with "
                    f"warm-up){extra}")
            del m
            torch.cuda.empty_cache()
        except Exception as e:                       # a failing row must not lose the others
            rep.row(f"{label}: failed: {type(e).__name__}: {e}".replace("\n", " "))
            traceback.print_exc()
    if "eager" in tokens:
        for row, t in tokens.items():
            if row != "eager":
                same = next((i for i, (x, y) in enumerate(zip(tokens["eager"], t)) if x != y), None)
                rep.row(f"32 greedy tokens, {row} against eager: " + ("identical" if same is None else
                                                                      f"first differ at step {same}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
