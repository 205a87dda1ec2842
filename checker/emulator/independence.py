"""Whether the batches of blocks that the emulator ran together touched each other's memory: the
global accesses of a merged run (address, width, batch, kind) are independent when no byte that one
batch wrote was read or written by another batch. Only then is running them together the same as
running them one after another."""
from __future__ import annotations

import numpy as np


def independent(accesses: list[tuple[np.ndarray, int, np.ndarray, str, int]]) -> bool:
    """accesses: (addresses, bytes each, batch of each (ascending), "read" | "write", allocation) per
    memory instruction and allocation."""
    return _apart(accesses) or _bytewise(accesses)


def _apart(accesses) -> bool:
    """Sufficient: in each allocation, the span each batch writes meets no span another batch touches."""
    spans = {}                                       # (allocation, batch, wrote?) -> [low, high)
    for a, w, b, kind, alloc in accesses:
        if not len(a):
            continue
        edges = np.flatnonzero(np.r_[True, b[1:] != b[:-1], True])
        for s0, s1 in zip(edges[:-1].tolist(), edges[1:].tolist()):
            part = a[s0:s1]
            lo, hi = int(part.min()), int(part.max()) + w
            for key in ((alloc, int(b[s0]), True), (alloc, int(b[s0]), False)) if kind != "read" else \
                    ((alloc, int(b[s0]), False),):
                old = spans.get(key)
                spans[key] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
    for (alloc, batch, wrote), (lo, hi) in spans.items():
        if wrote:
            for (alloc2, batch2, wrote2), (lo2, hi2) in spans.items():
                if alloc2 == alloc and batch2 != batch and not wrote2 and lo < hi2 and lo2 < hi:
                    return False
    return True


def _bytewise(accesses) -> bool:
    """Exact: no byte one batch wrote was touched by another batch."""
    writes = [(a, w, b) for a, w, b, kind, _ in accesses if kind != "read" and len(a)]
    if not writes:
        return True
    wb = np.concatenate([(a.astype(np.uint64)[:, None] + np.arange(w, dtype=np.uint64)).ravel() for a, w, _ in writes])
    wbatch = np.concatenate([np.repeat(b, w) for _, w, b in writes])
    order = np.lexsort((wbatch, wb))
    wb, wbatch = wb[order], wbatch[order]
    if ((wb[1:] == wb[:-1]) & (wbatch[1:] != wbatch[:-1])).any():
        return False                     # one byte written by two batches
    # each written byte's run of bytes (in address order) written by the same batch ends before run_end
    change = np.flatnonzero(np.r_[wbatch[1:] != wbatch[:-1], True])
    run_end = change[np.searchsorted(change, np.arange(len(wb)))] + 1
    for a, w, b, _, _ in accesses:
        if not len(a):
            continue
        a = a.astype(np.uint64)
        i0 = np.searchsorted(wb, a, side="left")
        i1 = np.searchsorted(wb, a + np.uint64(w), side="left")
        some = i1 > i0                   # the access covers written bytes: all of its own batch?
        if some.any():
            j = np.minimum(i0[some], len(wb) - 1)
            if not ((wbatch[j] == b[some]) & (run_end[j] >= i1[some])).all():
                return False
    return True
