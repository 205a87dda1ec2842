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


ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I8": 1, "U8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4,
            "I64": 8, "U64": 8, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


class SafetensorsFile:
    """One .safetensors file: its header parsed and checked (every entry a known dtype, a shape of
    non-negative integers, data offsets inside the file that hold exactly that shape), its data
    memory-mapped (nothing read until used)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            size = path.stat().st_size
            with open(path, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                if n > 100 << 20 or 8 + n > size:
                    raise ValueError(f"a header of {n} bytes in a file of {size}")
                header = json.loads(f.read(n))
        except (OSError, ValueError, struct.error, RecursionError) as e:
            raise EngineError(f"{path}: not a readable safetensors file: {e}") from None
        if not isinstance(header, dict):
            raise EngineError(f"{path}: the safetensors header is a JSON {type(header).__name__}, not an object "
                              "of tensors")
        header.pop("__metadata__", None)
        for name, h in header.items():
            self._check(name, h, size - 8 - n)
        self.header, self.base = header, 8 + n
        self._map = None

    def _check(self, name: str, h, data_bytes: int) -> None:
        def bad(why):
            raise EngineError(f"{self.path}: tensor {name}: {why}")
        if not isinstance(h, dict):
            bad(f"expected an entry with dtype, shape and data_offsets, got {h!r:.80}")
        dt, shape, offs = h.get("dtype"), h.get("shape"), h.get("data_offsets")
        if dt not in ITEMSIZE:
            bad(f"dtype {dt!r} is not a safetensors dtype ({', '.join(ITEMSIZE)})")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            bad(f"shape {shape!r:.80}: expected a list of integers >= 0")
        if not (isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) and not isinstance(o, bool)
                                                                  for o in offs) and 0 <= offs[0] <= offs[1] <= data_bytes):
            bad(f"data_offsets {offs!r:.80}: expected [begin, end] within the file's {data_bytes} data bytes")
        want = int(np.prod(shape, dtype=object)) * ITEMSIZE[dt]
        if offs[1] - offs[0] != want:
            bad(f"data_offsets span {offs[1] - offs[0]} bytes, but {dt} of shape {shape} takes {want}")

    def names(self) -> list[str]:
        return list(self.header)

    def dtype(self, name: str) -> str:
        return self.header[name]["dtype"]

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.header[name]["shape"])

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


def _plain_name(d: Path, fname, index: Path) -> str:
    """A file an index names: a plain file name in the model folder (no folders, no `..`, not absolute),
    so nothing outside the folder is ever read through it."""
    if not isinstance(fname, str) or not fname or fname in (".", "..") or "/" in fname or "\\" in fname \
            or "\0" in fname:
        raise EngineError(f"{index}: weight_map names {fname!r:.120}: expected the name of a file in the model "
                          f"folder {d} (no folders, no '..', not an absolute path)")
    return fname


class Checkpoint:
    """Every tensor of a model directory by name, across its safetensors files."""

    def __init__(self, model_dir):
        d = Path(model_dir)
        index = d / "model.safetensors.index.json"
        if index.is_file():
            from .config import read_json
            wmap = read_json(index).get("weight_map")
            if not isinstance(wmap, dict) or not wmap:
                raise EngineError(f"{index}: expected a non-empty `weight_map` object (tensor name -> file name)")
            files = sorted({_plain_name(d, f, index) for f in wmap.values()})
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

    def check(self, cfg: Qwen3Config) -> None:
        """Every tensor the engine will load is present, of a dtype it reads, and of the shape the config
        implies: an EngineError naming the file, the tensor and what was expected, before any is loaded."""
        per_layer = len(layer_names(0))
        if cfg.num_hidden_layers * per_layer > len(self.where):     # a layer count no checkpoint this size holds
            for i in range(len(self.where) // per_layer + 1):         # (10**12 layers: never list their names)
                for name in layer_names(i).values():
                    if name not in self.where:
                        raise missing(name)
        for name, shape in expected_shapes(cfg, embed_name(self, cfg)).items():
            f = self.where.get(name)
            if f is None:
                raise missing(name)
            if f.dtype(name) not in ST_DTYPES:
                raise EngineError(f"{f.path}: tensor {name} has dtype {f.dtype(name)}; supported: BF16, F16, F32")
            if f.shape(name) != shape:
                raise EngineError(f"{f.path}: tensor {name} has shape {list(f.shape(name))}, the config implies "
                                  f"{list(shape)}")

    def get(self, name: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        """The tensor's bits in `dtype` (bf16/f16 as uint16), checked against the shape the config gives."""
        f = self.where.get(name)
        if f is None:
            raise missing(name)
        if f.shape(name) != tuple(shape):
            raise EngineError(f"{f.path}: tensor {name} has shape {list(f.shape(name))}, the config implies {list(shape)}")
        bits, dt = f.bits(name)
        return bits if dt == dtype else encode(decode(bits, dt), dtype)


def missing(name: str) -> EngineError:
    """The error for a tensor the engine loads that a checkpoint does not have."""
    if name == "lm_head.weight":
        return EngineError("lm_head.weight is missing and tie_word_embeddings is false")
    return EngineError(f"weight {name} is missing from the checkpoint")


def embed_name(ck, cfg: Qwen3Config) -> str:
    """The tensor the embedding is read from: model.embed_tokens.weight, or, tied, lm_head.weight where
    only that is stored (transformers' tie_weights then ties the embedding to it)."""
    embed, head = "model.embed_tokens.weight", "lm_head.weight"
    return head if cfg.tie_word_embeddings and embed not in ck and head in ck else embed


def expected_shapes(cfg: Qwen3Config, embed: str = "model.embed_tokens.weight") -> dict[str, tuple[int, ...]]:
    """Each tensor the engine loads (the embedding from `embed`) and the shape the config implies for it."""
    V, H, D, I = cfg.vocab_size, cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    out = {embed: (V, H), "model.norm.weight": (H,)}
    if not cfg.tie_word_embeddings:
        out["lm_head.weight"] = (V, H)
    shapes = {"q": (cfg.q_heads * D, H), "k": (cfg.kv_heads * D, H), "v": (cfg.kv_heads * D, H),
              "o": (H, cfg.q_heads * D), "q_norm": (D,), "k_norm": (D,), "gate": (I, H), "up": (I, H),
              "down": (H, I), "in_norm": (H,), "post_norm": (H,)}
    for i in range(cfg.num_hidden_layers):
        out |= {name: shapes[k] for k, name in layer_names(i).items()}
    return out


def layer_names(i: int) -> dict[str, str]:
    p = f"model.layers.{i}."
    return {k: p + v for k, v in {
        "q": "self_attn.q_proj.weight", "k": "self_attn.k_proj.weight", "v": "self_attn.v_proj.weight",
        "o": "self_attn.o_proj.weight", "q_norm": "self_attn.q_norm.weight", "k_norm": "self_attn.k_norm.weight",
        "gate": "mlp.gate_proj.weight", "up": "mlp.up_proj.weight", "down": "mlp.down_proj.weight",
        "in_norm": "input_layernorm.weight", "post_norm": "post_attention_layernorm.weight"}.items()}


def load_layer(ck: Checkpoint, cfg: Qwen3Config, i: int, dtype: str) -> dict[str, np.ndarray]:
    """One decoder layer's weights as the kernels take them: qkv [(Hq+2Hkv)*128, H] and gate_up
    [2I, H] fused by rows (q, k, v / gate, up), the others as stored; I is cfg.kernel_intermediate, gate
    and up padded with zero rows to it and down with zero columns where intermediate_size is less."""
    n, H, D, I = layer_names(i), cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    pad = cfg.kernel_intermediate - I

    def g(k, shape):
        w = ck.get(n[k], dtype, shape)
        if not pad or k not in ("gate", "up", "down"):
            return w
        return np.pad(w, ((0, pad), (0, 0)) if k != "down" else ((0, 0), (0, pad)))
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
    """embed [V, H], final norm [H], lm_head [V, H]: the embedding itself when tied, unless the checkpoint
    also stores an lm_head of other values, which transformers (5.x PreTrainedModel.tie_weights) then
    keeps, untied, and so does the engine; tied with only an lm_head stored, that one for both (embed_name)."""
    V, H = cfg.vocab_size, cfg.hidden_size
    source = embed_name(ck, cfg)
    embed = ck.get(source, dtype, (V, H))
    if source == "lm_head.weight":
        lm_head = embed
    elif "lm_head.weight" in ck:
        lm_head = ck.get("lm_head.weight", dtype, (V, H))
        if cfg.tie_word_embeddings and _equal(lm_head, embed):
            lm_head = embed                      # a stored copy: one tensor (one upload)
    elif cfg.tie_word_embeddings:
        lm_head = embed
    else:
        raise EngineError("lm_head.weight is missing and tie_word_embeddings is false")
    return {"embed": embed, "norm": ck.get("model.norm.weight", dtype, (H,)), "lm_head": lm_head}


def _equal(a: np.ndarray, b: np.ndarray, rows: int = 4096) -> bool:
    """Bit for bit, a block of rows at a time (no [V, H] temporary)."""
    return all(np.array_equal(a[i:i + rows], b[i:i + rows]) for i in range(0, len(a), rows))
