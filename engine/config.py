"""Qwen3Config: the shape of a Qwen3 dense model, read from a Hugging Face config.json. Refuses, with
a sentence, what the engine cannot run: another architecture, MoE, sliding-window attention, RoPE
scaling, attention biases, a head_dim other than 128 (the kernels' contract)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

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
    max_position_embeddings: int = 40960
    dtype: str = "bf16"            # the checkpoint's dtype as kreg names it (bf16 / f16)

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
        return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", **d,
                "torch_dtype": {"bf16": "bfloat16", "f16": "float16"}[self.dtype], "attention_bias": False,
                "attention_dropout": 0.0, "hidden_act": "silu", "use_sliding_window": False,
                "sliding_window": None, "max_window_layers": self.num_hidden_layers, "rope_scaling": None,
                "bos_token_id": 151643, "eos_token_id": 151645, "initializer_range": 0.02, "use_cache": True}


def _fail(path, why: str):
    raise EngineError(f"{path}: {why}")


def _rope_theta(raw: dict, path) -> float:
    """theta from the top-level `rope_theta` or the newer `rope_parameters`; any scaling is refused."""
    params = raw.get("rope_parameters") or {}
    scaling = raw.get("rope_scaling") or {}
    for block in (params, scaling):
        kind = block.get("rope_type", block.get("type", "default"))
        if kind not in ("default", None):
            _fail(path, f"RoPE scaling {kind!r} is not supported (only the default RoPE)")
    theta = params.get("rope_theta", raw.get("rope_theta"))
    if theta is None:
        _fail(path, "no rope_theta (neither top-level nor in rope_parameters)")
    return float(theta)


def parse_config(raw: dict, path="config.json") -> Qwen3Config:
    arch = raw.get("architectures") or []
    mtype = raw.get("model_type")
    if mtype == "qwen3_moe" or raw.get("num_experts") or raw.get("num_local_experts"):
        _fail(path, "a mixture-of-experts model (Qwen3-MoE) is not supported: only dense Qwen3")
    if mtype != "qwen3" and "Qwen3ForCausalLM" not in arch:
        _fail(path, f"unsupported architecture {arch or mtype!r}: the engine runs Qwen3ForCausalLM (model_type qwen3)")
    if raw.get("use_sliding_window"):
        _fail(path, "sliding-window attention (use_sliding_window: true) is not supported")
    if raw.get("attention_bias"):
        _fail(path, "attention biases (attention_bias: true) are not supported")
    if raw.get("hidden_act", "silu") != "silu":
        _fail(path, f"activation {raw['hidden_act']!r} is not supported (Qwen3 uses silu)")
    need = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    missing = [k for k in need if not isinstance(raw.get(k), int) or raw[k] < 1]
    if missing:
        _fail(path, f"missing or not a positive integer: {', '.join(missing)}")
    heads = raw["num_attention_heads"]
    kv = raw.get("num_key_value_heads") or heads
    head_dim = raw.get("head_dim") or raw["hidden_size"] // heads
    if head_dim != HEAD_DIM:
        _fail(path, f"head_dim {head_dim} is not supported: the attention kernels take head_dim {HEAD_DIM}")
    if heads % kv:
        _fail(path, f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}")
    dt = str(raw.get("dtype") or raw.get("torch_dtype") or "bfloat16")
    if dt not in DTYPES and dt != "float32":
        _fail(path, f"dtype {dt!r} is not supported (bfloat16, float16; float32 weights are converted)")
    for k in ("hidden_size", "intermediate_size"):
        if raw[k] % 8:
            _fail(path, f"{k} {raw[k]} is not a multiple of 8 (the kernels' 16-byte vectors)")
    return Qwen3Config(
        vocab_size=raw["vocab_size"], hidden_size=raw["hidden_size"], intermediate_size=raw["intermediate_size"],
        num_hidden_layers=raw["num_hidden_layers"], num_attention_heads=heads, num_key_value_heads=kv,
        head_dim=head_dim, rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)), rope_theta=_rope_theta(raw, path),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        max_position_embeddings=int(raw.get("max_position_embeddings", 40960)), dtype=DTYPES.get(dt, "bf16"))


def load_config(model_dir) -> Qwen3Config:
    path = Path(model_dir) / "config.json"
    if not Path(model_dir).is_dir():
        raise EngineError(f"{model_dir}: no such model directory")
    if not path.is_file():
        raise EngineError(f"{path}: missing (a Hugging Face model directory has config.json)")
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise EngineError(f"{path}: cannot be read as JSON: {e}") from None
    if not isinstance(raw, dict):
        _fail(path, "not a JSON object")
    return parse_config(raw, path)


def generation_defaults(model_dir) -> dict:
    """generation_config.json's sampling defaults and EOS ids (Qwen3: 151645 <|im_end|>, 151643
    <|endoftext|>), with those defaults where the file is absent."""
    out = {"eos_token_id": [151645, 151643], "do_sample": False, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
    path = Path(model_dir) / "generation_config.json"
    if path.is_file():
        try:
            raw = json.loads(path.read_text())
        except ValueError as e:
            raise EngineError(f"{path}: cannot be read as JSON: {e}") from None
        for k in ("do_sample", "temperature", "top_k", "top_p"):
            if raw.get(k) is not None:
                out[k] = raw[k]
        eos = raw.get("eos_token_id")
        if eos is not None:
            out["eos_token_id"] = sorted(set([eos] if isinstance(eos, int) else eos) | {151645, 151643})
    return out
