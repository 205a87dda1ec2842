"""Checked reads of config.json values: a positive integer, a positive number, each refusal an
EngineError naming the file and the key; transformers' Qwen3Config defaults for keys left out."""
from __future__ import annotations

from .errors import EngineError


def fail(path, why: str):
    raise EngineError(f"{path}: {why}")


# what transformers' Qwen3Config assumes where config.json leaves a key out (a shape key is refused instead)
HF_DEFAULTS = {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32,
               "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128, "rms_norm_eps": 1e-6,
               "rope_theta": 10000.0, "tie_word_embeddings": False, "max_position_embeddings": 32768}
SHAPE_KEYS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")


def integer(raw: dict, key: str, path, default=None) -> int:
    v = raw.get(key)
    if v is None:
        if default is None:
            fail(path, f"key {key!r} is missing (transformers would assume {HF_DEFAULTS[key]}, which is rarely "
                        "the checkpoint's: give it)")
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        fail(path, f"key {key!r}: expected a positive integer, got {v!r}")
    return v


def number(raw: dict, key: str, path, default: float) -> float:
    v = raw.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
        fail(path, f"key {key!r}: expected a positive number, got {v!r}")
    return float(v)
