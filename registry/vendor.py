"""Vendor routines a `vendor` variant may name: for each (library, op), the arguments the routine takes
(op params and dims, in order). A vendor variant has no source: it is never proven, never eligible for
safe-only, and is run only where its library is (the GPU); kreg.runtime.vendor calls it."""
from __future__ import annotations

ROUTINES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {   # (buffers, then dims)
    ("cublas", "gemv"): (("W", "x", "y"), ("N", "K")),
    ("cublas", "gemm"): (("X", "W", "Y"), ("T", "N", "K")),
}
LIBRARIES = tuple(sorted({lib for lib, _ in ROUTINES}))


def routine(library: str, op: str) -> str:
    """The entry name a vendor variant's launch carries."""
    return f"{library}_{op}"
