"""Seeded inputs and poison: the bits of every readable param of a case (and their exact values for the
references), a NaN-with-payload (or a fixed bit pattern for integers) to fill outputs with before a launch,
and a random byte pattern for guard bands and scratch."""
from __future__ import annotations

import numpy as np

from kreg.registry.schema import Op, Variant

from .chunks import CHUNK, chunk_map
from .dtypes import encode, exact, is_float, itemsize, storage

# Two poisons per dtype (first run, re-poisoned runs): quiet NaNs with payloads no arithmetic makes
# (NaN-producing hardware gives the canonical NaN), and unlikely integers.
POISON = {
    "f64": (0x7FF8DEADBEEFCAFE, 0x7FF8BADC0FFEE123), "f32": (0x7FC0DEAD, 0x7FA1B2C3),
    "f16": (0x7E5A, 0x7D3C), "bf16": (0x7FDA, 0x7FB3),
    "i8": (-0x5B, 0x3A), "u8": (0xA5, 0x5C), "i32": (-0x5A5A5A5B, 0x3C3C3C3D), "u32": (0xA5A5A5A5, 0x3C3C3C3D),
    "i64": (-0x5A5A5A5A5A5A5A5B, 0x3C3C3C3C3C3C3C3D), "u64": (0xA5A5A5A5A5A5A5A5, 0x3C3C3C3C3C3C3C3D),
}


def poison_bits(dtype: str, which: int = 0) -> np.ndarray:
    """One element of poison as the dtype's storage type."""
    return np.array(POISON[dtype][which]).astype(storage(dtype))


def poison_bytes(dtype: str, nbytes: int, which: int = 0) -> np.ndarray:
    n = nbytes // itemsize(dtype)
    return np.full(n, poison_bits(dtype, which), dtype=storage(dtype)).view(np.uint8)


def pattern_bytes(nbytes: int, rng: np.random.Generator) -> np.ndarray:
    """Random bytes for guard bands and scratch: a kernel cannot write them back by accident."""
    return rng.integers(0, 256, size=nbytes, dtype=np.uint8)


def readable_params(op: Op) -> list[str]:
    """Params whose contents a kernel reads: `in`, `inout` and device-scalar (shaped `scalar`) params."""
    return [p.name for p in op.params.values() if p.role in ("in", "inout") or (p.role == "scalar" and p.shape)]


def output_params(op: Op) -> list[str]:
    return [p.name for p in op.params.values() if p.role in ("out", "inout")]


def host_scalars(op: Op) -> dict:
    """By-value scalars at their defaults (what bind() passes when no value is given)."""
    return {p.name: p.default for p in op.params.values() if p.role == "scalar" and not p.shape
            and p.default is not None}


def make_inputs(op: Op, variant: Variant, dims: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Seeded inputs for every readable param as the dtype's bits (storage type), shaped as the op says:
    floats are standard normal values rounded to the dtype (generated chunk by chunk, each chunk from its
    own child seed, on a thread pool); index params draw from their `values` range."""
    out = {}
    for name in readable_params(op):
        p = op.params[name]
        shape = op.shape(name, dims)
        dt = op.dtype_of(name, variant.types)
        if p.values is not None:
            lo, hi = int(p.values[0](dims)), int(p.values[1](dims))
            vals = rng.integers(lo, hi + 1, size=shape) if hi >= lo else np.zeros(shape, dtype=np.int64)
        elif is_float(dt):
            out[name] = _normal_bits(shape, dt, int(rng.integers(1 << 63)))
            continue
        elif dt.startswith("u"):
            vals = rng.integers(0, 16, size=shape)
        else:
            vals = rng.integers(-8, 9, size=shape)
        out[name] = encode(vals, dt).reshape(shape)
    return out


BLOCK = 1 << 15


def _normal_bits(shape, dtype: str, seed: int) -> np.ndarray:
    bits = np.empty(shape, storage(dtype))
    flat = bits.reshape(-1)
    seeds = np.random.SeedSequence(seed).spawn(-(-flat.size // CHUNK))

    def fill(lo: int, hi: int) -> None:
        gen = np.random.Generator(np.random.PCG64(seeds[lo // CHUNK]))
        for at in range(lo, hi, BLOCK):            # float64 temporaries that stay in cache
            flat[at:min(hi, at + BLOCK)] = encode(gen.standard_normal(min(hi, at + BLOCK) - at), dtype)
    chunk_map(fill, flat.size, CHUNK)
    return bits


def input_values(bits: dict[str, np.ndarray], op: Op, variant: Variant) -> dict[str, np.ndarray]:
    """The inputs as the references take them: exact values (see dtypes.exact)."""
    return {n: exact(b, op.dtype_of(n, variant.types)) for n, b in bits.items()}


def to_bytes(bits: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(bits).reshape(-1).view(np.uint8)
