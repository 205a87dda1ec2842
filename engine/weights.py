"""Weights from safetensors files, memory-mapped: one file or many (with or without
model.safetensors.index.json), bf16 / f16 / f32 tensors read as raw bits without torch, converted to
the engine's dtype (bf16 or f16) and fused where the kernels want them fused (q/k/v, gate/up)."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from kreg.conformance.dtypes import decode, encode

from .config import Qwen3Config
from .errors import EngineError

ST_DTYPES = {"BF16": ("bf16", np.uint16), "F16": ("f16", np.uint16), "F32": ("f32", np.uint32)}


class SafetensorsFile:
    """One .safetensors file: its header parsed, its data memory-mapped (nothing read until used)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            with open(path, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                if n > 100 << 20:
                    raise ValueError(f"header of {n} bytes")
                header = json.loads(f.read(n))
        except (OSError, ValueError, struct.error) as e:
            raise EngineError(f"{path}: not a readable safetensors file: {e}") from None
        header.pop("__metadata__", None)
        self.header, self.base = header, 8 + n
        self._map = None

    def names(self) -> list[str]:
        return list(self.header)

    def bits(self, name: str) -> tuple[np.ndarray, str]:
        """(the tensor's raw bits as a memory-mapped array of its shape, kreg dtype)."""
        h = self.header[name]
        if h["dtype"] not in ST_DTYPES:
            raise EngineError(f"{self.path}: tensor {name} has dtype {h['dtype']}; supported: BF16, F16, F32")
        dt, np_t = ST_DTYPES[h["dtype"]]
        if self._map is None:
            self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        lo, hi = (self.base + o for o in h["data_offsets"])
        return self._map[lo:hi].view(np_t).reshape(h["shape"]), dt


class Checkpoint:
    """Every tensor of a model directory by name, across its safetensors files."""

    def __init__(self, model_dir):
        d = Path(model_dir)
        index = d / "model.safetensors.index.json"
        if index.is_file():
            try:
                wmap = json.loads(index.read_text())["weight_map"]
            except (OSError, ValueError, KeyError) as e:
                raise EngineError(f"{index}: not a safetensors index (weight_map): {e}") from None
            files = sorted(set(wmap.values()))
        else:
            files = sorted(p.name for p in d.glob("*.safetensors"))
            if not files:
                raise EngineError(f"{d}: no *.safetensors weights (nor model.safetensors.index.json)")
        self.files, self.where = {}, {}
        for fname in files:
            p = d / fname
            if not p.is_file():
                raise EngineError(f"{p}: missing (named by model.safetensors.index.json)")
            f = self.files[fname] = SafetensorsFile(p)
            for name in f.names():
                self.where[name] = f

    def __contains__(self, name: str) -> bool:
        return name in self.where

    def get(self, name: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        """The tensor's bits in `dtype` (bf16/f16 as uint16), checked against the shape the config gives."""
        f = self.where.get(name)
        if f is None:
            raise EngineError(f"weight {name} is missing from the checkpoint")
        bits, dt = f.bits(name)
        if tuple(bits.shape) != tuple(shape):
            raise EngineError(f"{f.path}: {name} has shape {list(bits.shape)}, the config implies {list(shape)}")
        return bits if dt == dtype else encode(decode(bits, dt), dtype)


def layer_names(i: int) -> dict[str, str]:
    p = f"model.layers.{i}."
    return {k: p + v for k, v in {
        "q": "self_attn.q_proj.weight", "k": "self_attn.k_proj.weight", "v": "self_attn.v_proj.weight",
        "o": "self_attn.o_proj.weight", "q_norm": "self_attn.q_norm.weight", "k_norm": "self_attn.k_norm.weight",
        "gate": "mlp.gate_proj.weight", "up": "mlp.up_proj.weight", "down": "mlp.down_proj.weight",
        "in_norm": "input_layernorm.weight", "post_norm": "post_attention_layernorm.weight"}.items()}


def load_layer(ck: Checkpoint, cfg: Qwen3Config, i: int, dtype: str) -> dict[str, np.ndarray]:
    """One decoder layer's weights as the kernels take them: qkv [(Hq+2Hkv)*128, H] and gate_up
    [2I, H] fused by rows (q, k, v / gate, up), the others as stored."""
    n, H, D, I = layer_names(i), cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    g = lambda k, shape: ck.get(n[k], dtype, shape)        # noqa: E731
    return {
        "qkv": np.concatenate([g("q", (cfg.q_heads * D, H)), g("k", (cfg.kv_heads * D, H)),
                               g("v", (cfg.kv_heads * D, H))]),
        "o": g("o", (H, cfg.q_heads * D)),
        "q_norm": g("q_norm", (D,)), "k_norm": g("k_norm", (D,)),
        "gate_up": np.concatenate([g("gate", (I, H)), g("up", (I, H))]),
        "down": g("down", (H, I)),
        "in_norm": g("in_norm", (H,)), "post_norm": g("post_norm", (H,)),
    }


def load_globals(ck: Checkpoint, cfg: Qwen3Config, dtype: str) -> dict[str, np.ndarray]:
    """embed [V, H], final norm [H], lm_head [V, H] (the embedding itself when tied)."""
    V, H = cfg.vocab_size, cfg.hidden_size
    embed = ck.get("model.embed_tokens.weight", dtype, (V, H))
    if cfg.tie_word_embeddings:                  # as transformers does: a stored copy is ignored
        lm_head = embed
    elif "lm_head.weight" in ck:
        lm_head = ck.get("lm_head.weight", dtype, (V, H))
    else:
        raise EngineError("lm_head.weight is missing and tie_word_embeddings is false")
    return {"embed": embed, "norm": ck.get("model.norm.weight", dtype, (H,)), "lm_head": lm_head}
