"""Per-element tolerance bounds of a float output: atol + rtol |want|, and for an op with an `accumulation`
entry (outputs that are fp32 sums of n products whose order and rounding the kernel chooses: tiles, split
chains, tensor-core blocks) also (1 + rtol) * gamma * sum_k |term_k|, gamma = c n u / (1 - c n u), the
sum of absolute terms given per element by the op's float64 error scale (references.ERROR_SCALES, or a user's plug-in).
The model behind c and u is in the op's yaml and docs/tolerance.md."""
from __future__ import annotations

import numpy as np

from kreg.registry.schema import Op

from .plugins import error_scale_for


def gamma(op: Op, dims: dict[str, int]) -> float:
    """c n u / (1 - c n u) for the op's accumulation entry at these dims (0 without one)."""
    acc = op.accumulation
    if not acc:
        return 0.0
    cnu = acc["c"] * int(acc["terms"](dims)) * acc["u"]
    if not 0 <= cnu < 1:
        raise ValueError(f"op {op.name}: c n u = {cnu:g} at {dims}: the accumulation bound is void (c n u >= 1)")
    return cnu / (1 - cnu)


def tolerance_for(op: Op, dtype: str, dims: dict[str, int]) -> dict | None:
    """The op's tolerance of a dtype with its gamma at these dims (None if the op gives none)."""
    tol = op.tolerance.get(dtype)
    return None if tol is None else {**tol, "gamma": gamma(op, dims)}


def error_scales(op: Op, inputs: dict, dims: dict[str, int], scalars: dict | None = None,
                 xp=np) -> dict:
    """sum_k |term_k| per element of each output, for an op with an accumulation entry (else empty); in
    the array module xp (references.py)."""
    if not op.accumulation:
        return {}
    fn = error_scale_for(op.reference)
    if fn is None:
        raise KeyError(f"op {op.name} has an accumulation entry but no error scale named {op.reference!r}")
    return fn(**inputs, **dims, **(scalars or {}), xp=xp)


def bound(tol: dict, want_abs: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """The largest |got - want| allowed, elementwise: atol + rtol |want| (+ (1 + rtol) gamma scale)."""
    b = want_abs * tol["rtol"] + tol["atol"]
    if scale is not None and tol.get("gamma"):
        b = b + (tol["gamma"] * (1 + tol["rtol"])) * scale
    return b
