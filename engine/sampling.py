"""Sampling on the host from a row of logits: temperature, then top-k, then top-p (nucleus), as Hugging
Face's generate applies them, from a seeded NumPy generator. Greedy decoding does not come here: it is
the argmax kernel on the device."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0          # 0: greedy (the device's argmax)
    top_k: int = 0                    # 0: off
    top_p: float = 1.0                # 1: off
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0

    def __post_init__(self):
        if self.temperature < 0 or self.top_k < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"bad sampling settings: temperature {self.temperature} (>= 0), top_k {self.top_k} "
                             f"(>= 0), top_p {self.top_p} (in (0, 1])")


def probabilities(logits: np.ndarray, s: Sampling) -> np.ndarray:
    """The distribution a token is drawn from (float64, sums to 1)."""
    x = np.asarray(logits, dtype=np.float64) / s.temperature
    x = np.where(np.isnan(x), -np.inf, x)
    if 0 < s.top_k < x.size:
        kth = np.partition(x, -s.top_k)[-s.top_k]
        x = np.where(x >= kth, x, -np.inf)
    p = np.exp(x - np.max(x))
    p /= p.sum()
    if s.top_p < 1:
        order = np.argsort(-p, kind="stable")
        cum = np.cumsum(p[order])
        keep = cum - p[order] < s.top_p              # the smallest prefix whose mass reaches top_p
        mask = np.zeros_like(p, dtype=bool)
        mask[order[keep]] = True
        p = np.where(mask, p, 0.0)
        p /= p.sum()
    return p


def sample(logits: np.ndarray, s: Sampling, rng: np.random.Generator) -> int:
    p = probabilities(logits, s)
    return int(rng.choice(p.size, p=p))
