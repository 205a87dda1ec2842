"""RoPE tables in float64: the default rotary frequencies theta^(-2i/d) and YaRN scaling (the long-context
recipe of the Qwen3 model cards) as transformers computes it (modeling_rope_utils._compute_yarn_parameters):
each frequency blended between the original (extrapolation) and the original / factor (interpolation) by a
linear ramp over the dimensions whose rotations in the original context lie between beta_slow and
beta_fast, and cos and sin scaled by the attention factor (0.1 ln(factor) + 1 by default). Also
transformers' linear, llama3 and dynamic scalings (Scaling)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

HEAD_DIM = 128


@dataclass(frozen=True)
class Yarn:
    """YaRN's parameters (transformers' names; None where transformers derives the value)."""
    factor: float
    original_max_position_embeddings: int
    beta_fast: float | None = None          # transformers: `or 32`
    beta_slow: float | None = None          # transformers: `or 1`
    attention_factor: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool = True

    @property
    def context(self) -> int:
        """The positions the scaled model serves: factor x the original context."""
        return int(self.factor * self.original_max_position_embeddings)

    def to_hf(self) -> dict:
        d = {"rope_type": "yarn", "factor": self.factor,
             "original_max_position_embeddings": self.original_max_position_embeddings}
        for k in ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d | ({} if self.truncate else {"truncate": False})


@dataclass(frozen=True)
class Scaling:
    """transformers' other RoPE scalings that one fixed table serves (its names): linear (every frequency
    / factor), llama3 (frequencies whose wavelength exceeds original / low_freq_factor divided by factor,
    those below original / high_freq_factor kept, a smooth blend between), dynamic (NTK-aware: transformers
    changes the frequencies only for sequences longer than max_position_embeddings, which the engine
    does not serve, so the default ones)."""
    rope_type: str                                  # "linear" | "llama3" | "dynamic"
    factor: float
    low_freq_factor: float | None = None            # llama3
    high_freq_factor: float | None = None           # llama3
    original_max_position_embeddings: int | None = None    # llama3

    def to_hf(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def _scaled(inv: np.ndarray, s: Scaling) -> np.ndarray:
    """transformers' _compute_linear_scaling_rope_parameters / _compute_llama3_parameters, in float64."""
    if s.rope_type == "linear":
        return inv / s.factor
    if s.rope_type == "dynamic":
        return inv
    old = s.original_max_position_embeddings
    wavelen = 2 * math.pi / inv
    out = np.where(wavelen > old / s.low_freq_factor, inv / s.factor, inv)
    smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
    medium = (wavelen >= old / s.high_freq_factor) & (wavelen <= old / s.low_freq_factor)
    return np.where(medium, (1 - smooth) * out / s.factor + smooth * out, out)


def _mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn_attention_factor(y: Yarn) -> float:
    """The factor cos and sin are scaled by."""
    if y.attention_factor is not None:
        return float(y.attention_factor)
    if y.mscale and y.mscale_all_dim:
        return _mscale(y.factor, y.mscale) / _mscale(y.factor, y.mscale_all_dim)
    return _mscale(y.factor)


def inv_freq(theta: float, head_dim: int = HEAD_DIM, yarn: Yarn | None = None,
             scaling: Scaling | None = None) -> np.ndarray:
    """The head_dim / 2 rotary frequencies (radians per position), float64 (YaRN or another scaling, not both)."""
    if yarn is None:
        inv = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
        return inv if scaling is None else _scaled(inv, scaling)
    if scaling is not None:
        raise ValueError("YaRN and another RoPE scaling together")
    pos_freqs = theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    extrapolation = 1.0 / pos_freqs
    interpolation = 1.0 / (yarn.factor * pos_freqs)

    def correction_dim(rotations: float) -> float:     # the dimension that turns `rotations` times in the context
        return (head_dim * math.log(yarn.original_max_position_embeddings / (rotations * 2 * math.pi))
                / (2 * math.log(theta)))

    low, high = correction_dim(yarn.beta_fast or 32), correction_dim(yarn.beta_slow or 1)
    if yarn.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001                                     # transformers: prevents a division by zero
    ramp = np.clip((np.arange(head_dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    keep = 1 - ramp                                       # 1: the original frequency (high frequencies)
    return interpolation * (1 - keep) + extrapolation * keep


def rope_tables(S: int, theta: float = 1e6, head_dim: int = HEAD_DIM, yarn: Yarn | None = None,
                scaling: Scaling | None = None):
    """The cos/sin tables the qk_norm_rope ops take: [S, head_dim/2], cos(p * inv_freq_i) (times YaRN's
    attention factor where scaled), in float64 (round them once to f32 for the kernels)."""
    ang = np.arange(S, dtype=np.float64)[:, None] * inv_freq(theta, head_dim, yarn, scaling)[None, :]
    scale = yarn_attention_factor(yarn) if yarn is not None else 1.0
    return scale * np.cos(ang), scale * np.sin(ang)
