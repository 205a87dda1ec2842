"""Host work on large arrays, split into fixed-size chunks spread over a thread pool (NumPy releases the
GIL inside its loops). Chunk boundaries never depend on the number of threads, so seeded results do not."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache

CHUNK = 1 << 20


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=min(32, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                              else os.cpu_count() or 1))


def chunk_map(fn, n: int, chunk: int = CHUNK) -> list:
    """[fn(lo, hi) for every chunk [lo, hi) of range(n)], in order; chunks run on the pool."""
    bounds = [(lo, min(n, lo + chunk)) for lo in range(0, n, chunk)]
    if len(bounds) <= 1:
        return [fn(lo, hi) for lo, hi in bounds]
    return list(_pool().map(lambda b: fn(*b), bounds))
