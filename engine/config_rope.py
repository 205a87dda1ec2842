"""The RoPE of a Qwen3 config.json as transformers reads it: rope_scaling or rope_parameters, theta,
and YaRN's or a linear / dynamic / llama3 scaling's parameters, each checked; what the engine cannot
serve (longrope, ...) refused with a sentence."""
from __future__ import annotations

from kreg.conformance.rope import Scaling, Yarn

from .config_values import HF_DEFAULTS, fail as _fail, integer as _int, number as _number


YARN_KEYS = {"rope_type", "type", "factor", "original_max_position_embeddings", "rope_theta", "attention_factor",
             "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"}      # transformers' required + optional


def _yarn(block: dict, where: str, max_positions: int) -> Yarn:
    """YaRN's parameters, each checked (transformers' _validate_yarn_rope_parameters, refusing what it warns of);
    original_max_position_embeddings, where left out, is max_position_embeddings (transformers'
    standardize_rope_params)."""
    extra = sorted(set(block) - YARN_KEYS)
    if extra:
        _fail(where, f"YaRN does not take {', '.join(map(repr, extra))} (it takes {', '.join(sorted(YARN_KEYS))})")
    factor = _number(block, "factor", where, 0.0)
    if factor < 1:
        _fail(where, f"key 'factor': YaRN needs a number >= 1, got {block.get('factor')!r}")
    orig = _int(block, "original_max_position_embeddings", where, default=max_positions)
    opt = {k: _number(block, k, where, 0.0) if block.get(k) is not None else None
           for k in ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim")}
    if (opt["beta_fast"] or 32) < (opt["beta_slow"] or 1):
        _fail(where, f"beta_fast {opt['beta_fast'] or 32} is below beta_slow {opt['beta_slow'] or 1}")
    truncate = block.get("truncate", True)
    if not isinstance(truncate, bool):
        _fail(where, f"key 'truncate': expected true or false, got {truncate!r}")
    return Yarn(factor=factor, original_max_position_embeddings=orig, truncate=truncate, **opt)


SCALING_KEYS = {"linear": {"factor"}, "dynamic": {"factor"},
                "llama3": {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}}


def _scaling(kind: str, block: dict, where: str, max_positions: int) -> Scaling:
    """A linear, dynamic or llama3 scaling's parameters, each checked (transformers' validators, refusing
    what they warn of); llama3's original_max_position_embeddings, where left out, is max_position_embeddings."""
    extra = sorted(set(block) - SCALING_KEYS[kind] - {"rope_type", "type", "rope_theta"})
    if extra:
        _fail(where, f"RoPE scaling {kind!r} does not take {', '.join(map(repr, extra))} (it takes "
                     f"{', '.join(sorted(SCALING_KEYS[kind] | {'rope_theta'}))})")
    factor = _number(block, "factor", where, 0.0)
    if factor < 1:
        _fail(where, f"key 'factor': RoPE scaling {kind!r} needs a number >= 1, got {block.get('factor')!r}")
    if kind != "llama3":
        return Scaling(kind, factor)
    low, high = (_number(block, k, where, 0.0) for k in ("low_freq_factor", "high_freq_factor"))
    if not 0 < low < high:
        _fail(where, f"llama3 needs 0 < low_freq_factor < high_freq_factor, got {block.get('low_freq_factor')!r} "
                     f"and {block.get('high_freq_factor')!r}")
    orig = _int(block, "original_max_position_embeddings", where, default=max_positions)
    return Scaling(kind, factor, low, high, orig)


def _rope_block(block: dict, where: str, theta: float, max_positions: int) -> tuple:
    """(theta, YaRN or None, another Scaling or None) of one RoPE mapping: its own rope_theta, else
    `theta` (the top level's)."""
    kind = block.get("rope_type", block.get("type", "default"))
    if kind is not None and not isinstance(kind, str):
        _fail(where, f"key 'rope_type': expected a name (default, yarn, linear, llama3, dynamic), got {kind!r:.80}")
    own = _number(block, "rope_theta", where, theta)
    if kind == "yarn":
        return own, _yarn(block, where, max_positions), None
    if kind in SCALING_KEYS:
        return own, None, _scaling(kind, block, where, max_positions)
    if kind not in ("default", None):
        _fail(where, f"RoPE scaling {kind!r} is not supported (the default RoPE, yarn, linear, llama3 or dynamic)")
    return own, None, None


def read_rope(raw: dict, path, max_positions: int) -> tuple:
    """theta, YaRN's parameters and another scaling's as transformers reads them
    (convert_rope_params_to_dict): the `rope_scaling` mapping where config.json gives a non-empty one,
    else the newer `rope_parameters`; theta from that mapping's rope_theta, else the top-level
    rope_theta, else 10000. Where both mappings are given and imply different RoPE, refused
    (transformers would silently take rope_scaling's); longrope and the rest are refused."""
    top = _number(raw, "rope_theta", path, HF_DEFAULTS["rope_theta"])
    read = {}
    for key in ("rope_scaling", "rope_parameters"):
        b = raw.get(key)
        if b is not None and not isinstance(b, dict):
            _fail(path, f"key {key!r}: expected a mapping (rope_type, ...) or null, got {b!r}")
        if b:
            read[key] = _rope_block(b, f"{path}: {key}", top, max_positions)
    if len(set(read.values())) > 1:
        def what(t):
            return f"theta {t[0]}, " + ("YaRN" if t[1] else t[2].rope_type if t[2] else "no scaling")
        _fail(path, f"rope_scaling ({what(read['rope_scaling'])}) and rope_parameters "
                    f"({what(read['rope_parameters'])}) give different RoPE (transformers would take rope_scaling's "
                    "alone): give one")
    return next(iter(read.values()), (top, None, None))
