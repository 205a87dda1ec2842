"""Whether the batches of blocks that the emulator ran together touched each other's memory: the
global accesses of a merged run (address, width, batch, kind) are independent when no byte that one
batch wrote was read or written by another batch. Only then is running them together the same as
running them one after another."""
from __future__ import annotations

import numpy as np


def independent(accesses: list[tuple[np.ndarray, int, np.ndarray, str]]) -> bool:
    """accesses: (addresses, bytes each, batch of each, "read" | "write") per memory instruction."""
    writes = [(a, w, b) for a, w, b, kind in accesses if kind != "read" and len(a)]
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
    for a, w, b, _ in accesses:
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
