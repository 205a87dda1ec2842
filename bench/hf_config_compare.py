"""The engine against Hugging Face transformers' Qwen3ForCausalLM (float64) on unusual but valid Qwen3
configs, on the CPU (every kernel in the emulator; tiny random models, a 6-token prompt): per config
whether each loads (or the sentence it refuses with), the largest |logit difference| of the prompt's
positions over the largest |logit|, and whether 3 greedy tokens agree (transformers' argmax of its own
float64 logits; a 'tie' where its top two are within the engine's bf16 rounding of each other).

    python bench/hf_config_compare.py [OUT.txt] [--only NAME,...]
"""
from __future__ import annotations

import argparse
import json
import platform
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

PROMPT = [17, 912, 3, 455, 78, 999]
NEW = 3
BASE = dict(vocab_size=1024, hidden_size=128, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=1, tie_word_embeddings=True)
CARD = {"rope_type": "yarn", "factor": 4.0}


def cases():
    """name: (Qwen3Config overrides, config.json edits: set / drop / rope_scaling_set / rope_scaling_drop /
    other_lm_head / f32)."""
    from kreg.conformance.rope import Yarn
    y = lambda orig: Yarn(factor=4.0, original_max_position_embeddings=orig)      # noqa: E731
    sw = {"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 0}
    return {
        "base (hd128, GQA 2, tied, bf16)": ({}, {}),
        "kv_heads 1, heads 4 (GQA 4)": ({"num_attention_heads": 4}, {}),
        "GQA 3 (3/1)": ({"num_attention_heads": 3}, {}),
        "GQA 3 (6/2)": ({"num_attention_heads": 6, "num_key_value_heads": 2}, {}),
        "GQA 5 (5/1)": ({"num_attention_heads": 5}, {}),
        "MHA (2/2)": ({"num_key_value_heads": 2}, {}),
        "heads*hd 128 != hidden 256": ({"hidden_size": 256, "num_attention_heads": 1}, {}),
        "vocab 1001 tied": ({"vocab_size": 1001}, {}),
        "vocab 1001 untied": ({"vocab_size": 1001, "tie_word_embeddings": False}, {}),
        "vocab 1000 untied": ({"vocab_size": 1000, "tie_word_embeddings": False}, {}),
        "untied": ({"tie_word_embeddings": False}, {}),
        "tied + other lm_head stored": ({}, {"other_lm_head": True}),
        "rope_theta 1e4": ({"rope_theta": 1e4}, {}),
        "rope_theta 1e6": ({"rope_theta": 1e6}, {}),
        "yarn x4 orig 32 (maxpos 128)": ({"yarn": y(32), "max_position_embeddings": 128}, {}),
        "yarn x4 orig 8 (maxpos 32)": ({"yarn": y(8), "max_position_embeddings": 32}, {}),
        "yarn x4 orig 16, maxpos 32768": ({"yarn": y(16)}, {}),
        "yarn, rope_theta inside": ({"yarn": y(32)}, {"drop": ["rope_theta"], "rope_scaling_set": {"rope_theta": 1e6}}),
        "yarn, no original_max_pos": ({"yarn": y(32), "max_position_embeddings": 32},
                                      {"rope_scaling_drop": ["original_max_position_embeddings"]}),
        "rope_scaling linear x2": ({}, {"set": {"rope_scaling": {"rope_type": "linear", "factor": 2.0}}}),
        "rope_scaling dynamic x2": ({}, {"set": {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}}),
        "rope_scaling llama3": ({}, {"set": {"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                                              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                              "original_max_position_embeddings": 8}}}),
        "rope_parameters (transformers 5)": ({"rope_theta": 5e5}, {"drop": ["rope_theta", "rope_scaling"], "set": {
            "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}}}),
        "rope_scaling vs rope_parameters": ({}, {"drop": ["rope_theta"], "set": {
            "rope_scaling": CARD | {"original_max_position_embeddings": 8},
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}}),
        "rms_norm_eps 1e-5": ({"rms_norm_eps": 1e-5}, {}),
        "max_position_embeddings 16": ({"max_position_embeddings": 16}, {}),
        "extra unknown keys": ({}, {"set": {"foo_unknown": 3, "quantization_note": {"a": 1}}}),
        "float16": ({"dtype": "f16"}, {}),
        "float16 as 'dtype' key": ({"dtype": "f16"}, {"drop": ["torch_dtype"], "set": {"dtype": "float16"}}),
        "float32 weights (save_pretrained)": ({}, {"f32": True}),
        "optional keys left out": ({}, {"drop": ["rope_theta", "rms_norm_eps", "max_position_embeddings", "head_dim",
                                                 "attention_bias", "attention_dropout", "hidden_act",
                                                 "use_sliding_window", "sliding_window", "max_window_layers",
                                                 "rope_scaling", "torch_dtype", "bos_token_id", "eos_token_id",
                                                 "initializer_range", "use_cache", "architectures"]}),
        "num_key_value_heads left out": ({"num_key_value_heads": 2}, {"drop": ["num_key_value_heads"]}),
        "num_key_value_heads null": ({"num_key_value_heads": 2}, {"set": {"num_key_value_heads": None}}),
        "intermediate_size 100": ({"intermediate_size": 100}, {}),
        "sliding window 8, every layer": ({}, {"set": sw}),
        "sliding window set, none slides": ({}, {"set": sw | {"max_window_layers": 1}}),
        "head_dim 64": ({"head_dim": 64}, {}),
        "head_dim 96": ({"head_dim": 96}, {}),
        "head_dim 256": ({"head_dim": 256}, {}),
        "attention_bias true": ({}, {"set": {"attention_bias": True}}),
        "rope_scaling longrope": ({}, {"set": {"rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 64,
                                                                "long_factor": [2.0] * 64,
                                                                "original_max_position_embeddings": 8}}}),
    }


def build(root: Path, over: dict, edit: dict) -> Path:
    """A random model folder (make_random_model) with its config.json edited."""
    import torch
    import transformers
    from kreg.engine.random_model import make_random_model, random_tensors, shape_config, write_safetensors
    cfg = shape_config("tiny", **(BASE | over))
    d = make_random_model(root, cfg, seed=7)
    raw = json.loads((d / "config.json").read_text())
    for k in edit.get("drop", []):
        raw.pop(k, None)
    raw.update(edit.get("set", {}))
    if "rope_scaling_set" in edit:
        raw["rope_scaling"] |= edit["rope_scaling_set"]
    for k in edit.get("rope_scaling_drop", []):
        raw["rope_scaling"].pop(k)
    (d / "config.json").write_text(json.dumps(raw, indent=1))
    if edit.get("other_lm_head"):              # the embedding's rows reversed as a stored lm_head
        write_safetensors(d / "model.safetensors", [
            (n, "BF16", b.shape, (b[::-1].copy() if n == "lm_head.weight" else b).tobytes())
            for n, b in random_tensors(cfg, 7, lm_head_copy=True)])
    if edit.get("f32"):
        m = transformers.Qwen3ForCausalLM.from_pretrained(d, dtype=torch.float32)
        for f in d.glob("*.safetensors"):
            f.unlink()
        m.save_pretrained(d)
    return d


def hf_run(d: Path):
    import torch
    import transformers
    m = transformers.Qwen3ForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
    with torch.no_grad():
        logits = m(torch.tensor([PROMPT])).logits[0].numpy()
        seq, gaps = list(PROMPT), []
        for _ in range(NEW):
            last = m(torch.tensor([seq])).logits[0, -1].numpy()
            top = np.sort(last)[-2:]
            gaps.append((top[1] - top[0]) / max(abs(top[1]), 1e-30))
            seq.append(int(np.argmax(last)))
    return logits, seq[len(PROMPT):], gaps


def engine_run(d: Path):
    from kreg import runtime
    from kreg.engine import Engine, Sampling
    from kreg.engine import plan as P
    from kreg.engine.config import load_config
    cfg = load_config(d)
    eng = Engine(d, plan=P.explicit(runtime.device("cpu", max_cost=200_000_000), cfg.dtype), max_seq=32)
    got = eng.prefill(PROMPT, all_logits=True)
    return got, eng.generate(PROMPT, NEW, Sampling(), eos=()).tokens


def one(name: str, over: dict, edit: dict, root: Path) -> str:
    from kreg.engine.errors import EngineError
    t0 = time.process_time()
    d = build(root / "m", over, edit)
    try:
        want, want_toks, gaps = hf_run(d)
        hf = None
    except Exception as e:                                   # transformers itself cannot run it
        hf = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    try:
        got, toks = engine_run(d)
        eng = None
    except EngineError as e:
        eng = f"refused: {str(e).split('config.json: ')[-1][:200]}"
    shutil.rmtree(d)
    cpu = time.process_time() - t0
    if hf or eng:
        return (f"{name:36} | transformers: {hf or 'runs'} | engine: {eng or 'runs'} | {cpu:.0f}")
    diff = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    same = "same" if toks == want_toks else "tie" if any(g < 2 ** -8 for g in gaps) else "DIFFER"
    return f"{name:36} | {diff:.4f} | {same} ({toks} / {want_toks}) | {cpu:.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--only", help="comma-separated case names (substrings)")
    a = ap.parse_args(argv)
    import transformers
    lines = [f"# bench/hf_config_compare.py, {date.today()}, {platform.node()} ({platform.processor() or 'cpu'}), "
             f"transformers {transformers.__version__}; prompt {PROMPT}, {NEW} greedy tokens, seed 7",
             "# config | max |logit diff| / max |logit| (prompt positions) | greedy tokens engine / transformers "
             "| CPU s", "# (or: what transformers and the engine do with a config either cannot run)"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (over, edit) in cases().items():
            if a.only and not any(s in name for s in a.only.split(",")):
                continue
            lines.append(one(name, over, edit, Path(tmp)))
            print(lines[-1], flush=True)
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
