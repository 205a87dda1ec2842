"""A traced launch's memory accesses: kept as the emulator records them (per instruction issue, arrays over
the threads), turned into one Access object per thread and access only when asked; `columns` gives one
space's addresses, widths and kinds as arrays without building them (the conformance harness's guard
check reads every global access of a launch)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Access:
    block: tuple
    thread: tuple
    instr: int
    address: int
    width: int
    kind: str            # "read" | "write" | "atomic"
    space: str           # "global" | "shared"
    epoch: int
    wsync: int = 0       # bar.warp.sync instances the thread completed before the access (any mask)
    since: int | None = None   # a cp.async write (traced where it lands): the block's epoch at its issue


KINDS = ("read", "write", "atomic")


class AccessTrace:
    """The records of each batch of blocks (with the batch's block and thread coordinates), in launch order."""

    def __init__(self):
        self._batches: list[tuple[np.ndarray, np.ndarray, list]] = []
        self._list: list[Access] | None = None
        self.count = 0                 # accesses, one per thread and instruction issue

    def add(self, cta: np.ndarray, tidx: np.ndarray, records: list) -> None:
        """records: (instr, space, thread indices, addresses, width, kind, epochs, wsyncs, since) each."""
        self._batches.append((cta, tidx, records))
        self.count += sum(len(r[2]) for r in records)
        self._list = None

    def __len__(self) -> int:
        return self.count

    def accesses(self) -> list[Access]:
        if self._list is None:
            self._list = [a for cta, tidx, records in self._batches for a in _objects(cta, tidx, records)]
        return self._list

    def columns(self, space: str):
        """(address, width, kind, access) of this space's accesses in launch order: int64 arrays, kind as
        the index of the access's kind in KINDS (int8), and access(i), the i-th of them as an Access."""
        picked = [(b, r) for b, (_, _, records) in enumerate(self._batches) for r in records if r[1] == space]
        n = [len(r[2]) for _, r in picked]
        addr = np.concatenate([np.asarray(r[3], np.uint64).astype(np.int64) for _, r in picked]) if picked \
            else np.zeros(0, np.int64)
        width = np.repeat(np.array([r[4] for _, r in picked], np.int64), n)
        kind = np.repeat(np.array([KINDS.index(r[5]) for _, r in picked], np.int8), n)
        ends = np.cumsum(n)

        def access(i: int) -> Access:
            j = int(np.searchsorted(ends, i, side="right"))
            b, r = picked[j]
            k = i - (int(ends[j - 1]) if j else 0)
            cta, tidx, _ = self._batches[b]
            return _objects(cta, tidx, [(r[0], r[1], r[2][k:k + 1], r[3][k:k + 1], r[4], r[5], r[6][k:k + 1],
                                         r[7][k:k + 1], None if r[8] is None else r[8][k:k + 1])])[0]
        return addr, width, kind, access


def _objects(cta: np.ndarray, tidx: np.ndarray, records: list) -> list[Access]:
    out = []
    for ins, space, idx, addrs, width, kind, ep, ws, since in records:
        sl = [None] * len(idx) if since is None else since.tolist()
        blocks = map(tuple, np.asarray(cta)[:, idx].T.tolist())
        threads = map(tuple, np.asarray(tidx)[:, idx].T.tolist())
        for b, t, a, e, w, s in zip(blocks, threads, addrs.tolist(), ep.tolist(), ws.tolist(), sl):
            out.append(Access(b, t, ins, int(a), width, kind, space, int(e), int(w), s))
    return out
