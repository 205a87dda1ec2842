"""Qwen3Config: the shape of a Qwen3 dense model, read from a Hugging Face config.json. Refuses, with
a sentence, what the engine cannot run: another architecture, MoE, RoPE scaling other than YaRN,
linear, llama3 and dynamic, attention biases, a head_dim other than 128 (the kernels' contract).
Sliding-window layers limit the context to the window (within it they attend to every position)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from kreg.conformance.rope import Scaling, Yarn

from .config_rope import read_rope
from .config_values import HF_DEFAULTS, SHAPE_KEYS, fail as _fail, integer as _int, number as _number
from .errors import EngineError

HEAD_DIM = 128                     # fixed by the attention and qk_norm_rope op contracts
DTYPES = {"bfloat16": "bf16", "float16": "f16", "bf16": "bf16", "f16": "f16", "half": "f16"}


@dataclass(frozen=True)
class Qwen3Config:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int = HEAD_DIM
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1e6
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 32768
    dtype: str = "bf16"            # the checkpoint's dtype as kreg names it (bf16 / f16)
    yarn: Yarn | None = None       # YaRN RoPE scaling (rope_scaling / rope_parameters rope_type "yarn")
    scaling: Scaling | None = None  # rope_type linear, llama3 or dynamic
    attention_window: int | None = None    # sliding_window, where some layer slides (transformers' layer_types)

    @property
    def context(self) -> int:
        """The positions the model serves: max_position_embeddings, or with YaRN factor x the original
        context where that is more (the Qwen3 model cards' 131072 for factor 4 over 32768); no more than
        the attention window where a layer slides (within it a sliding layer attends to every position,
        as a full one does: the engine's kernels)."""
        n = max(self.max_position_embeddings, self.yarn.context if self.yarn else 0)
        return min(n, self.attention_window) if self.attention_window else n

    @property
    def kernel_intermediate(self) -> int:
        """intermediate_size rounded up to a multiple of 8 (the kernels' 16-byte vectors): the width the
        MLP launches take; the weights are padded with zero rows (gate, up) and columns (down), which add
        nothing (silu(0) * 0 = 0)."""
        return -(-self.intermediate_size // 8) * 8

    @property
    def q_heads(self) -> int:
        return self.num_attention_heads

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads

    @property
    def qkv_rows(self) -> int:
        return (self.q_heads + 2 * self.kv_heads) * self.head_dim

    def to_hf(self) -> dict:
        """The config.json a Hugging Face Qwen3ForCausalLM reads."""
        d = asdict(self)
        d.pop("dtype")
        d.pop("yarn")
        d.pop("scaling")
        window = d.pop("attention_window")
        return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **d,
                "torch_dtype": {"bf16": "bfloat16", "f16": "float16"}[self.dtype], "attention_bias": False,
                "attention_dropout": 0.0, "hidden_act": "silu", "use_sliding_window": window is not None,
                "sliding_window": window, "max_window_layers": 0 if window else self.num_hidden_layers,
                "rope_scaling": self.yarn.to_hf() if self.yarn else self.scaling.to_hf() if self.scaling else None,
                "bos_token_id": 151643, "eos_token_id": 151645, "initializer_range": 0.02, "use_cache": True}


LAYER_TYPES = ("full_attention", "sliding_attention")


def _window(raw: dict, layers: int, path) -> int | None:
    """The attention window some layer applies, as transformers' Qwen3Config decides it: sliding_window
    (default 4096) where use_sliding_window is true and a layer is "sliding_attention" (layer_types, or
    else every layer from max_window_layers (default 28) on); else None."""
    types = raw.get("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) != layers
                              or not all(t in LAYER_TYPES for t in types)):
        _fail(path, f"key 'layer_types': expected a list of {layers} of {', '.join(LAYER_TYPES)}, got {types!r:.200}")
    window = raw.get("sliding_window", 4096) if raw.get("use_sliding_window") else None
    if window is None:
        if types and "sliding_attention" in types:
            _fail(path, "layer_types names sliding_attention layers but use_sliding_window is false or "
                        "sliding_window null (transformers cannot run that either): give the window")
        return None
    window = _int(raw, "sliding_window", path, default=4096)
    if types is None:
        first = raw.get("max_window_layers", 28)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            _fail(path, f"key 'max_window_layers': expected an integer >= 0, got {first!r}")
        return window if first < layers else None
    return window if "sliding_attention" in types else None


def _kv_heads(raw: dict, heads: int, path) -> int:
    """num_key_value_heads as transformers' Qwen3Config reads it: null means as many as the attention
    heads; left out, its default 32 (refused where 32 does not divide num_attention_heads: transformers
    could not load such a checkpoint)."""
    if "num_key_value_heads" not in raw:
        if heads % HF_DEFAULTS["num_key_value_heads"]:
            _fail(path, f"key 'num_key_value_heads' is missing (transformers would assume "
                        f"{HF_DEFAULTS['num_key_value_heads']}, which does not divide num_attention_heads {heads}: "
                        "give it)")
        return HF_DEFAULTS["num_key_value_heads"]
    return _int(raw, "num_key_value_heads", path, default=heads)


def parse_config(raw: dict, path="config.json") -> Qwen3Config:
    """The config of a dense Qwen3 model; an EngineError naming the key and what was expected for
    anything the engine cannot run or read. Keys left out take transformers' Qwen3 defaults, except
    the shape keys, which are refused."""
    arch = raw.get("architectures") or []
    mtype = raw.get("model_type")
    if mtype == "qwen3_moe" or raw.get("num_experts") or raw.get("num_local_experts"):
        _fail(path, "a mixture-of-experts model (Qwen3-MoE) is not supported: only dense Qwen3")
    if mtype != "qwen3" and (not isinstance(arch, list) or "Qwen3ForCausalLM" not in arch):
        _fail(path, f"unsupported architecture {arch or mtype!r}: the engine runs Qwen3ForCausalLM (model_type qwen3)")
    for key in ("use_sliding_window", "attention_bias", "tie_word_embeddings"):
        if raw.get(key) is not None and not isinstance(raw[key], bool):
            _fail(path, f"key {key!r}: expected true or false, got {raw[key]!r}")
    if raw.get("attention_bias"):
        _fail(path, "attention biases (attention_bias: true) are not supported")
    if raw.get("hidden_act", "silu") != "silu":
        _fail(path, f"activation {raw['hidden_act']!r} is not supported (Qwen3 uses silu)")
    vocab, hidden, inter, layers, heads = (_int(raw, k, path) for k in SHAPE_KEYS)
    kv = _kv_heads(raw, heads, path)
    head_dim = _int(raw, "head_dim", path, default=HF_DEFAULTS["head_dim"])
    if head_dim != HEAD_DIM:
        _fail(path, f"head_dim {head_dim} is not supported: the attention kernels take head_dim {HEAD_DIM}")
    if heads % kv:
        _fail(path, f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
    dt = raw.get("dtype") or raw.get("torch_dtype") or "bfloat16"
    if not isinstance(dt, str) or (dt not in DTYPES and dt != "float32"):
        _fail(path, f"dtype {dt!r} is not supported (bfloat16, float16; float32 weights are converted)")
    if hidden % 8:
        _fail(path, f"hidden_size {hidden} is not a multiple of 8 (the kernels' 16-byte vectors)")
    max_positions = _int(raw, "max_position_embeddings", path, default=HF_DEFAULTS["max_position_embeddings"])
    theta, yarn, scaling = read_rope(raw, path, max_positions)
    return Qwen3Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim,
        rms_norm_eps=_number(raw, "rms_norm_eps", path, HF_DEFAULTS["rms_norm_eps"]),
        rope_theta=theta, yarn=yarn, scaling=scaling, attention_window=_window(raw, layers, path),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        max_position_embeddings=max_positions,
        dtype=DTYPES.get(dt, "bf16"))


def read_json(path: Path, what: str = "a JSON object"):
    """The JSON object in a model folder's file; an EngineError naming the file if it cannot be read,
    is not JSON, gives a key twice, or is not an object."""
    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise EngineError(f"{path}: key {k!r} is given twice (refused rather than keep either)")
            out[k] = v
        return out
    try:
        raw = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=pairs)
    except (OSError, ValueError, RecursionError) as e:
        raise EngineError(f"{path}: cannot be read as JSON: {e}") from None
    if not isinstance(raw, dict):
        _fail(path, f"expected {what}, got a JSON {type(raw).__name__}")
    return raw


def load_config(model_dir) -> Qwen3Config:
    path = Path(model_dir) / "config.json"
    if not Path(model_dir).is_dir():
        raise EngineError(f"{model_dir}: no such model directory")
    if not path.is_file():
        raise EngineError(f"{path}: missing (a Hugging Face model directory has config.json)")
    return parse_config(read_json(path), path)


def generation_defaults(model_dir) -> dict:
    """generation_config.json's sampling defaults and EOS ids, each checked; where the file or a key is
    absent, transformers' defaults (do_sample false, temperature 1, top_k 50, top_p 1) and the EOS ids
    config.json names (else Qwen3's 151645 <|im_end|> and 151643 <|endoftext|>)."""
    out = {"eos_token_id": None, "do_sample": False, "temperature": 1.0, "top_k": 50, "top_p": 1.0}
    path = Path(model_dir) / "generation_config.json"
    raw = read_json(path) if path.is_file() else {}
    checks = {"do_sample": (lambda v: isinstance(v, bool), "true or false"),
              "temperature": (lambda v: _real(v) and v >= 0, "a number >= 0"),
              "top_k": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an integer >= 0"),
              "top_p": (lambda v: _real(v) and 0 < v <= 1, "a number in (0, 1]")}
    for k, (ok, what) in checks.items():
        if raw.get(k) is not None:
            if not ok(raw[k]):
                _fail(path, f"key {k!r}: expected {what}, got {raw[k]!r}")
            out[k] = raw[k]
    eos = raw.get("eos_token_id")
    where = path
    if eos is None:
        cfg = Path(model_dir) / "config.json"
        eos, where = (read_json(cfg).get("eos_token_id") if cfg.is_file() else None), cfg
    if eos is None:
        out["eos_token_id"] = [151645, 151643]
    else:
        ids = [eos] if not isinstance(eos, list) else eos
        if not ids or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            _fail(where, f"key 'eos_token_id': expected a token id or a list of them, got {eos!r}")
        out["eos_token_id"] = sorted(set(ids))
    return out


def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v != float("inf")
