"""Which dims conformance runs at: the op's named cases that fit a byte budget, plus seeded (or
hypothesis-chosen) ragged shapes inside the op's dims and requirements, biased towards sizes that are
not multiples of any block or tile size."""
from __future__ import annotations

import numpy as np

from kreg.registry.schema import Op, Variant

from kreg.checker.ptx.bind import buffer_sizes

BLOCKISH = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)


def footprint(op: Op, variant: Variant, dims: dict[str, int]) -> int:
    """Bytes of every buffer (tensor params and scratch) at these dims."""
    return sum(buffer_sizes(variant, op, dims).values())


def allowed(op: Op, variant: Variant, dims: dict[str, int], max_bytes: int) -> bool:
    if op.dims_ok(dims):
        return False
    try:
        return footprint(op, variant, dims) <= max_bytes
    except (ValueError, ZeroDivisionError, OverflowError):
        return False


def named_cases(op: Op, variant: Variant, max_bytes: int | None) -> dict[str, dict[str, int]]:
    """The op's named cases whose buffers fit max_bytes (all of them when max_bytes is None)."""
    return {n: d for n, d in op.cases.items() if max_bytes is None or footprint(op, variant, d) <= max_bytes}


def candidates(op: Op, dim: str, cap: int) -> list[int]:
    """Values worth trying for one dim: its ends, the named cases' values and their neighbours, and
    ragged neighbours of block-like sizes, all within [lo, min(hi, cap)]."""
    lo, hi = op.dims[dim]
    hi = min(hi, max(lo, cap))
    vals = {lo, hi, lo + 1, hi - 1}
    for case in op.cases.values():
        c = case[dim]
        vals |= {c, c - 1, c + 1, c // 2, c // 2 + 1}
    for b in BLOCKISH:
        vals |= {b - 1, b + 1, 3 * b + 1, 5 * b - 3, b, 2 * b}
    return sorted(v for v in vals if lo <= v <= hi)


def _draw(op: Op, rng: np.random.Generator, pools: dict[str, np.ndarray], cap: int, _ends=None) -> dict[str, int]:
    dims = {}
    for d, (lo, hi) in op.dims.items():
        top, log_lo, log_top = _ends[d] if _ends else _end(lo, hi, cap)
        r = rng.random()
        if r < 0.5 or top == lo:
            dims[d] = int(pick(rng, pools[d]))
        elif r < 0.8:   # log-uniform within the cap
            dims[d] = int(min(top, max(lo, round(np.exp(rng.uniform(log_lo, log_top))) - 1)))
        else:           # a multiple of a block-like size plus a ragged remainder
            b = int(pick(rng, _BLOCKISH))
            dims[d] = int(min(top, max(lo, b * int(rng.integers(1, 4)) + int(rng.integers(-2, 3)))))
    return dims


_BLOCKISH = np.array(BLOCKISH)


def pick(rng: np.random.Generator, values: np.ndarray):
    """rng.choice(values): the same draw from the same stream (tests/conformance/test_shapes.py), without
    choice's per-call overhead."""
    return values[rng.integers(0, len(values), dtype=np.int64)]


def _end(lo: int, hi: int, cap: int) -> tuple:
    """A dim's top within the cap and the ends of its log-uniform draw (the same each draw: made once)."""
    top = min(hi, max(lo, cap))
    return top, np.log(lo + 1), np.log(top + 1)


def is_ragged(op: Op, dims: dict[str, int]) -> bool:
    """True when some dim is not a multiple of 8 (so not of any block or tile size)."""
    return any(v % 8 for d, v in dims.items() if op.dims[d][0] != op.dims[d][1])


def ragged_dims(op: Op, variant: Variant, count: int, max_bytes: int, seed: int = 0,
                tries: int = 4000, min_bytes: int = 0) -> list[dict[str, int]]:
    """Up to `count` distinct seeded dims inside the op's ranges and requirements, whose buffers fit
    [min_bytes, max_bytes]; ragged ones first (at least half when the op allows them), then the others."""
    rng = np.random.default_rng(seed)
    pools = {d: np.array(candidates(op, d, max_bytes)) for d in op.dims}
    ends = {d: _end(lo, hi, max_bytes) for d, (lo, hi) in op.dims.items()}
    ragged: list[dict[str, int]] = []
    regular: list[dict[str, int]] = []
    seen: set[tuple] = {tuple(sorted(c.items())) for c in op.cases.values()}
    for _ in range(tries):
        if len(ragged) >= count and len(regular) >= count:
            break
        dims = _draw(op, rng, pools, max_bytes, ends)
        key = tuple(sorted(dims.items()))
        if key in seen or not allowed(op, variant, dims, max_bytes) or footprint(op, variant, dims) < min_bytes:
            continue
        seen.add(key)
        (ragged if is_ragged(op, dims) else regular).append(dims)
    n_ragged = min(len(ragged), max((count + 1) // 2, count - len(regular)))
    return ragged[:n_ragged] + regular[:count - n_ragged]


def dims_strategy(op: Op, variant: Variant, max_bytes: int):
    """A hypothesis strategy over dims inside the op's ranges and requirements, within max_bytes."""
    from hypothesis import strategies as st
    parts = {}
    for d, (lo, hi) in op.dims.items():
        top = min(hi, max(lo, max_bytes))
        parts[d] = st.one_of(st.sampled_from(candidates(op, d, max_bytes)), st.integers(lo, top))
    return st.fixed_dictionaries(parts).filter(lambda dims: allowed(op, variant, dims, max_bytes))
