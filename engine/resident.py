"""The model resident on the device: weights (uploaded once, q/k/v and gate/up fused), the RoPE tables,
the static KV cache ([S, Hkv, 128] per layer) and the named activation buffers the launches bind to."""
from __future__ import annotations

import numpy as np

from kreg import runtime
from kreg.conformance.rope import rope_tables

from .config import Qwen3Config
from .weights import Checkpoint, load_globals, load_layer

NBYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4}


class Resident:
    """vocab_rows: the rows of the embedding table on the device (the vocabulary, and zero rows up to the
    width argmax runs over: every id argmax can give indexes a row)."""

    def __init__(self, dev: runtime.Device, ck: Checkpoint, cfg: Qwen3Config, dtype: str, S: int,
                 vocab_rows: int | None = None):
        self.dev, self.cfg, self.dtype, self.S = dev, cfg, dtype, S
        g = load_globals(ck, cfg, dtype)
        pad = (vocab_rows or cfg.vocab_size) - cfg.vocab_size
        self.w = {k: self.upload(f"w.{k}", np.pad(v, ((0, pad), (0, 0))) if k == "embed" and pad > 0 else v)
                  for k, v in g.items() if k != "lm_head"}
        self.w["lm_head"] = self.w["embed"] if g["lm_head"] is g["embed"] else self.upload("w.lm_head", g["lm_head"])
        self.layers = [{k: self.upload(f"l{i}.{k}", v) for k, v in load_layer(ck, cfg, i, dtype).items()}
                       for i in range(cfg.num_hidden_layers)]
        # float64, rounded once to f32
        cos, sin = rope_tables(S, cfg.rope_theta, yarn=cfg.yarn, scaling=cfg.scaling)
        self.rope = {"rope_cos": self.upload("rope_cos", cos.astype(np.float32)),
                     "rope_sin": self.upload("rope_sin", sin.astype(np.float32))}
        kv = S * cfg.kv_heads * 128 * NBYTES[dtype]
        self.cache = [(dev.alloc(kv, f"k{i}"), dev.alloc(kv, f"v{i}")) for i in range(cfg.num_hidden_layers)]
        self.bufs: dict[str, runtime.Buffer] = {}

    def upload(self, name: str, host: np.ndarray) -> runtime.Buffer:
        return self.dev.alloc(host.nbytes, name).copy_from(host)

    def act(self, name: str, n: int, dtype: str | None = None) -> runtime.Buffer:
        """The activation buffer `name` with room for n elements (grown, never shrunk)."""
        b = self.bufs.get(name)
        size = n * NBYTES[dtype or self.dtype]
        if b is None or b.nbytes < size:
            b = self.bufs[name] = self.dev.alloc(size, name)
        return b

    def fill_neg_inf(self, name: str, start: int, end: int) -> None:
        """Elements start..end-1 of the activation buffer `name` set to -inf (of the model's dtype)."""
        if end > start:
            bits = {"bf16": 0xFF80, "f16": 0xFC00}[self.dtype]
            self.bufs[name].copy_from(np.full(end - start, bits, dtype=np.uint16), offset=start * NBYTES[self.dtype])

    def read(self, buf: runtime.Buffer, n: int, dtype: str | None = None) -> np.ndarray:
        """n elements of a buffer: float64 values of a float dtype, int64 of i32."""
        from kreg.conformance.dtypes import decode
        dt = dtype or self.dtype
        raw = buf.copy_to(0, n * NBYTES[dt]).view(np.int32 if dt == "i32" else np.uint16)
        return raw.astype(np.int64) if dt == "i32" else decode(raw, dt)

    def write_i32(self, name: str, value: int) -> None:
        self.bufs[name].copy_from(np.array([value], dtype=np.int32))
