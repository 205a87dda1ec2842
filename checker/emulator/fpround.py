"""Bit-exact floating point for the PTX emulator: f32/f16/bf16 rounding of exact float64 values
(including fused multiply-add without double rounding), directed rounding modes, bf16/f16 packing and
the GPU's canonical NaNs."""
from __future__ import annotations

import numpy as np

F32_NAN = np.uint32(0x7FFFFFFF)     # what the GPU returns for an f32 operation that yields NaN
F16_NAN = np.uint16(0x7FFF)
BF16_NAN = np.uint16(0x7FFF)
_FMT_BITS = {"f32": np.uint32, "f16": np.uint16, "bf16": np.uint16}


def canon_f32(r: np.ndarray) -> np.ndarray:
    """float32 results with every NaN replaced by the canonical 0x7fffffff."""
    r = np.asarray(r, np.float32)
    nan = np.isnan(r)
    if nan.any():
        r = np.where(nan, F32_NAN.view(np.float32), r)
    return r


def bf16_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def f16_to_f32(bits) -> np.ndarray:
    return np.asarray(bits).astype(np.uint16).view(np.float16).astype(np.float32)


def f32_to_bf16_rn(x) -> np.ndarray:
    """Round-to-nearest-even on the bit pattern; NaN becomes the canonical 0x7fff."""
    u = np.asarray(x, np.float32).view(np.uint32)
    r = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, np.float32)), BF16_NAN, r)


def _f64_to_bf16_rn(s: np.ndarray) -> np.ndarray:
    s = np.asarray(s, np.float64)
    u = s.view(np.uint64)
    rounded = ((u + (((u >> 45) & 1) + np.uint64((1 << 44) - 1))) >> 45) << 45
    with np.errstate(over="ignore"):
        normal = (rounded.view(np.float64).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        tiny = (np.rint(s * 2.0 ** 133) * 2.0 ** -133).astype(np.float32).view(np.uint32) >> 16
    r = np.where(np.abs(s) < 2.0 ** -126, tiny.astype(np.uint16), normal)
    return np.where(np.isnan(s), BF16_NAN, r)


def from_f64_rn(s, fmt: str) -> np.ndarray:
    """Round float64 values to fmt (round-to-nearest-even); returns the fmt's bit patterns."""
    s = np.asarray(s, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt == "f32":
            return s.astype(np.float32).view(np.uint32)
        if fmt == "f16":
            return s.astype(np.float16).view(np.uint16)
    return _f64_to_bf16_rn(s)


def to_f64(bits, fmt: str) -> np.ndarray:
    if fmt == "f32":
        return np.asarray(bits).astype(np.uint32).view(np.float32).astype(np.float64)
    if fmt == "f16":
        return np.asarray(bits).astype(np.uint16).view(np.float16).astype(np.float64)
    return bf16_to_f32(bits).astype(np.float64)


def _step(bits, fmt: str, up):
    """The next representable value above (up=True) or below, as bit patterns (finite inputs)."""
    t = _FMT_BITS[fmt]
    nb = 8 * np.dtype(t).itemsize
    sign = (bits >> t(nb - 1)) & t(1)
    mag = bits & t((1 << (nb - 1)) - 1)
    away = np.where(sign == 1, ~np.asarray(up), np.asarray(up))      # grow the magnitude?
    zero = mag == 0
    grown = bits + t(1)
    shrunk = bits - t(1)
    r = np.where(away, grown, shrunk)
    # from +-0 moving toward the other sign: the smallest subnormal of that sign
    r = np.where(zero & ~away, np.where(np.asarray(up), t(1), t(1) | t(1 << (nb - 1))), r)
    return r.astype(t)


def round_exact(s, e, fmt: str, mode: str = "rn") -> np.ndarray:
    """Round the exact value s + e (s = float64 nearest, e = its error term, |e| <= ulp(s)/2) to fmt
    with rounding mode rn/rz/rm/rp; returns bit patterns. Fixes the double-rounding tie case."""
    s = np.asarray(s, np.float64)
    e = np.broadcast_to(np.asarray(e, np.float64), s.shape)
    r = from_f64_rn(s, fmt)
    if mode == "rn" and (not e.any() or not maybe_halfway(s, fmt)):
        return r                     # s is exact, or no s is halfway: one rounding
    with np.errstate(invalid="ignore", over="ignore"):
        r64 = to_f64(r, fmt)
        finite = np.isfinite(s) & np.isfinite(r64)
        d = s - r64
        if mode == "rn":
            inexact = finite & (e != 0) & (d != 0)
            if inexact.any():
                nb = _step(r, fmt, d > 0)
                tie = inexact & (np.abs(to_f64(nb, fmt) - s) == np.abs(d))
                # at a tie of s, the true value lies on e's side: take the neighbour if that side is s's side
                take = tie & ((e > 0) == (d > 0))
                r = np.where(take, nb, r)
            return r
        above = np.where(d != 0, d > 0, e > 0)            # true value above r?
        below = np.where(d != 0, d < 0, e < 0)
        if mode == "rm":
            fix = finite & below
            up = False
        elif mode == "rp":
            fix = finite & above
            up = True
        elif mode == "rz":
            neg = r64 < 0
            fix = finite & ((~neg & below & (r64 > 0)) | (neg & above))
            up = neg
        else:
            raise ValueError(f"rounding mode {mode}")
        # r overshot: also handles overflow (r = inf while s finite) only for rn; directed modes below
        inf = ~np.isfinite(r64) & np.isfinite(s)
        if inf.any():
            maxf = {"f32": np.uint32(0x7F7FFFFF), "f16": np.uint16(0x7BFF), "bf16": np.uint16(0x7F7F)}[fmt]
            sign = np.signbit(s)
            keep_inf = (mode == "rp") & ~sign | (mode == "rm") & sign
            r = np.where(inf & ~keep_inf, np.where(sign, maxf | _FMT_BITS[fmt](1 << (8 * np.dtype(_FMT_BITS[fmt]).itemsize - 1)), maxf), r)
        if fix.any():
            r = np.where(fix, _step(r, fmt, np.broadcast_to(up, r.shape)), r)
        return r.astype(_FMT_BITS[fmt])


def two_sum(a, b):
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


# Round to nearest of s = fl64(x) gives x's fmt rounding unless s is exactly halfway between two fmt values (no
# float64 lies strictly between x and s, and every fmt midpoint is a float64), which in fmt's normal range means
# the float64 fraction bits below fmt's last one are 100...0: (mask, half) per fmt, and the magnitudes
# [lo, hi) where that test alone says it (outside: subnormal, near overflow, inf, NaN, always looked at; a zero s
# is the exact value, so nothing to fix).
_MIDPOINT = {"f32": ((1 << 29) - 1, 1 << 28, 2.0 ** -126, 2.0 ** 127),
             "f16": ((1 << 42) - 1, 1 << 41, 2.0 ** -14, 2.0 ** 15),
             "bf16": ((1 << 45) - 1, 1 << 44, 2.0 ** -126, 2.0 ** 127)}


def maybe_halfway(s: np.ndarray, fmt: str) -> bool:
    """False only if no float64 of s is halfway between two fmt values (nor outside fmt's normal range): then
    rounding s to nearest is the exact value's rounding, whatever its error term."""
    mask, half, lo, hi = _MIDPOINT[fmt]
    a = np.abs(s)
    return bool((((s.view(np.uint64) & np.uint64(mask)) == np.uint64(half)) | ~(((a >= lo) | (a == 0)) & (a < hi)))
                .any())


def fma_exact(a, b, c, fmt: str, mode: str = "rn") -> np.ndarray:
    """fma of float64-held fmt values (the product is exact in float64); returns fmt bit patterns."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
        c = np.asarray(c, np.float64)
        if mode == "rn":
            s = p + c
            if not maybe_halfway(np.asarray(s), fmt):
                return from_f64_rn(s, fmt)       # what round_exact gives: its only fix is at a halfway s
        s, e = two_sum(p, c)
        e = np.where(np.isfinite(e), e, 0.0)
    return round_exact(s, e, fmt, mode)


def add_exact(a, b, fmt: str, mode: str = "rn") -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        s, e = two_sum(np.asarray(a, np.float64), np.asarray(b, np.float64))
        e = np.where(np.isfinite(e), e, 0.0)
    return round_exact(s, e, fmt, mode)


def mul_exact(a, b, fmt: str, mode: str = "rn") -> np.ndarray:
    """Product of two fmt values: exact in float64 for f32/f16/bf16 (24+24 bits, exponents in range)."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    return round_exact(p, 0.0, fmt, mode)
