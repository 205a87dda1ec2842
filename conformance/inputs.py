"""Seeded inputs and poison: the bits of every readable param of a case (and their exact values for the
references), a NaN-with-payload (or a fixed bit pattern for integers) to fill outputs with before a launch,
and a random byte pattern for guard bands and scratch."""
from __future__ import annotations

from functools import cache

import numpy as np

from kreg.registry.schema import Op, Variant

from .chunks import CHUNK, chunk_map
from .dtypes import decode, encode, exact, is_float, itemsize, storage

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


SHARED_BYTES = 64 << 20      # a partly-touched input this large is drawn once per process and shape
_shared: dict[tuple, np.ndarray] = {}


def make_inputs(op: Op, variant: Variant, dims: dict[str, int], rng: np.random.Generator,
                draw: int | None = None) -> dict[str, np.ndarray]:
    """Seeded inputs for every readable param as the dtype's bits (storage type), shaped as the op says:
    floats are standard normal values rounded to the dtype (chunk by chunk, each chunk from its own child
    seed, on a thread pool); index params draw from their `values` range, with the range's ends as edge
    values when `draw` is given (see index_values: a device-scalar length such as attention_decode's n is
    then S in a case's first launch, and 1 or a uniform draw in its second). A float input the op touches
    only in part (its `traffic` entry: a gathered table, a KV cache) of SHARED_BYTES or more is drawn
    once per shape and reused by later draws (cases, and the fresh inputs of launch 2, whose index params
    are drawn afresh so they touch other rows): drawing a 1.5 GB table per launch cost minutes per variant."""
    out = {}
    for name in readable_params(op):
        p = op.params[name]
        shape = op.shape(name, dims)
        dt = op.dtype_of(name, variant.types)
        if p.values is not None:
            vals = index_values(op, name, dims, rng, shape, draw)
        elif is_float(dt):
            seed = int(rng.integers(1 << 63))
            key = (op.name, name, dt, tuple(shape))
            if name in op.traffic and int(np.prod(shape)) * storage(dt).itemsize >= SHARED_BYTES:
                if key not in _shared:
                    _shared.clear()          # one at a time: bounded memory
                    _shared[key] = _normal_bits(shape, dt, seed)
                out[name] = _shared[key]
            else:
                out[name] = _normal_bits(shape, dt, seed)
            continue
        elif dt.startswith("u"):
            vals = rng.integers(0, 16, size=shape)
        else:
            vals = rng.integers(-8, 9, size=shape)
        out[name] = encode(vals, dt).reshape(shape)
    return out


def index_values(op: Op, name: str, dims: dict[str, int], rng: np.random.Generator, shape,
                 draw: int | None = None) -> np.ndarray:
    """Uniform draws from an index param's `values` range (zeros if the range is empty). With `draw`
    (a case's launches count it from 0) the first element takes an end of the range: the top in draw 0,
    the bottom in half of the draws 1 (seeded; the others stay uniform, so middle values are seen too)."""
    p = op.params[name]
    lo, hi = int(p.values[0](dims)), int(p.values[1](dims))
    if hi < lo:
        return np.zeros(shape, dtype=np.int64)
    vals = rng.integers(lo, hi + 1, size=shape)
    if draw is not None and vals.size:
        flat = vals.reshape(-1)
        if draw == 0:
            flat[0] = hi
        elif draw == 1 and rng.random() < 0.5:
            flat[0] = lo
    return vals


BLOCK = 1 << 15


def _normal_bits(shape, dtype: str, seed: int) -> np.ndarray:
    """Standard normal values rounded to the dtype, as bits: 16-bit floats drawn directly as bit patterns
    from the rounded distribution (rounded_normal_table), wider ones generated and rounded."""
    bits = np.empty(shape, storage(dtype))
    flat = bits.reshape(-1)
    seeds = np.random.SeedSequence(seed).spawn(-(-flat.size // CHUNK))
    table = rounded_normal_table(dtype) if itemsize(dtype) == 2 else None

    def fill(lo: int, hi: int) -> None:
        gen = np.random.Generator(np.random.PCG64(seeds[lo // CHUNK]))
        for at in range(lo, hi, BLOCK):            # temporaries that stay in cache
            n = min(hi, at + BLOCK) - at
            if table is None:
                flat[at:at + n] = encode(gen.standard_normal(n), dtype)
                continue
            accept, own, alias = table
            r = gen.bit_generator.random_raw(n)
            slot = (r >> np.uint64(48)).astype(np.intp)                      # 16 bits pick a slot,
            keep = (r & np.uint64((1 << 48) - 1)) < accept.take(slot)        # 48 its pattern or the alias
            flat[at:at + n] = np.where(keep, own.take(slot), alias.take(slot))
    chunk_map(fill, flat.size, CHUNK)
    return bits


@cache
def rounded_normal_table(dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walker's alias table (acceptance in units of 2^-48, slot pattern, alias pattern) of a standard
    normal value rounded to nearest in a 16-bit float dtype: every finite pattern with the normal mass
    of the interval that rounds to it (Simpson's rule over the interval: ~1e-10 relative)."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    v = decode(bits, dtype)
    bits, v = bits[np.isfinite(v)], v[np.isfinite(v)]
    order = np.lexsort((~np.signbit(v), v))                  # ascending, -0 before +0
    bits, v = bits[order], v[order]
    edges = np.concatenate([v[:1], (v[:-1] + v[1:]) / 2, v[-1:]])
    lo, hi = edges[:-1], edges[1:]
    with np.errstate(under="ignore"):
        mass = (hi - lo) * (np.exp(-lo * lo / 2) + 4 * np.exp(-((lo + hi) / 2) ** 2 / 2) + np.exp(-hi * hi / 2))
    n = 1 << 16
    q = np.zeros(n)
    q[:mass.size] = mass / mass.sum() * n
    own = np.zeros(n, np.uint16)
    own[:bits.size] = bits
    alias, accept = own.copy(), np.ones(n)
    small, large = [i for i in range(n) if q[i] < 1], [i for i in range(n) if q[i] >= 1]
    q = q.tolist()
    while small and large:                                   # Vose's construction
        s, big = small.pop(), large.pop()
        accept[s], alias[s] = q[s], own[big]
        q[big] += q[s] - 1
        (small if q[big] < 1 else large).append(big)
    return np.minimum(np.floor(accept * 2.0 ** 48), 2.0 ** 48).astype(np.uint64), own, alias


def input_values(bits: dict[str, np.ndarray], op: Op, variant: Variant) -> dict[str, np.ndarray]:
    """The inputs as the references take them: exact values (see dtypes.exact)."""
    return {n: exact(b, op.dtype_of(n, variant.types)) for n, b in bits.items()}


def to_bytes(bits: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(bits).reshape(-1).view(np.uint8)
