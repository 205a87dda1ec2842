"""Host-side dtype handling: NumPy has no bfloat16, so every tensor crosses to the device as raw bits.
encode() rounds float64 values to a kreg dtype's bit pattern; decode() turns bits back into float64, exact()
into the narrowest exact type."""
from __future__ import annotations

import numpy as np

from kreg.checker.emulator.fpround import f32_to_bf16_rn
from kreg.registry.schema import DTYPES

from .chunks import chunk_map

BITS = {"f32": np.uint32, "f16": np.uint16, "bf16": np.uint16, "f64": np.uint64, "i8": np.int8, "u8": np.uint8,
        "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}


# The smallest magnitude that rounds to infinity in each float dtype (to nearest even): the largest finite
# value plus half an ulp. A reference beyond it is, correctly rounded, an infinity of its sign.
OVERFLOW = {"f16": 65520.0, "bf16": float(2 ** 128 - 2 ** 119), "f32": float(2 ** 128 - 2 ** 103), "f64": np.inf}


def is_float(dtype: str) -> bool:
    return dtype in ("f16", "bf16", "f32", "f64")


def storage(dtype: str) -> np.dtype:
    """The NumPy dtype that holds this kreg dtype's bits."""
    return np.dtype(BITS[dtype])


def encode(values, dtype: str) -> np.ndarray:
    """float64 (or int) values -> the dtype's bits, rounding to nearest even (bf16 via f32 first:
    the same double rounding a kernel's __float2bfloat16(float) does; NaN as the hardware makes it)."""
    a = np.asarray(values)
    if dtype == "bf16":
        return f32_to_bf16_rn(a.astype(np.float32))
    if dtype == "f16":
        return a.astype(np.float16).view(np.uint16)
    if dtype == "f32":
        return a.astype(np.float32).view(np.uint32)
    if dtype == "f64":
        return a.astype(np.float64).view(np.uint64)
    return a.astype(storage(dtype))


def decode(bits: np.ndarray, dtype: str) -> np.ndarray:
    """The dtype's bits -> float64 (floats) or int64 (integers). A signalling NaN (e.g. a poison payload
    left in an output) decodes to a NaN without NumPy's invalid-cast warning."""
    b = np.asarray(bits)
    with np.errstate(invalid="ignore"):
        return _decode(b, dtype)


def _decode(b, dtype):
    if dtype == "bf16":
        return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype == "f16":
        return b.astype(np.uint16).view(np.float16).astype(np.float64)
    if dtype == "f32":
        return b.astype(np.uint32).view(np.float32).astype(np.float64)
    if dtype == "f64":
        return b.astype(np.uint64).view(np.float64)
    return b.astype(np.int64)


def exact(bits: np.ndarray, dtype: str) -> np.ndarray:
    """The dtype's bits -> their values in the narrowest NumPy type that holds every one exactly: float32
    for f16/bf16/f32 (half decode()'s bytes), float64 for f64, int64 for integers. Chunked on a thread pool."""
    b = np.ascontiguousarray(bits)
    if dtype not in ("bf16", "f16", "f32"):
        return decode(b, dtype)
    out = np.empty(b.shape, np.float32)
    src, dst = b.reshape(-1), out.reshape(-1).view(np.uint32)

    def part(lo: int, hi: int) -> None:
        if dtype == "f16":
            dst[lo:hi].view(np.float32)[:] = src[lo:hi].view(np.float16)
        else:
            dst[lo:hi] = src[lo:hi]
            if dtype == "bf16":
                dst[lo:hi] <<= 16
    chunk_map(part, src.size)
    return out


def itemsize(dtype: str) -> int:
    return DTYPES[dtype][0]
