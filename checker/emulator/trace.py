"""A traced launch's memory accesses: kept as the emulator records them (per instruction issue, arrays over
the threads), turned into one Access object per thread and access only when asked; `columns` gives one
space's addresses, widths and kinds as arrays without building them (the conformance harness's guard
check reads every global access of a launch, the prover's witness replay its writes and bounds), `table`
every access's fields as arrays (the bounded race search), `of_threads` the objects of a few threads only."""
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

    def of_threads(self, threads) -> list[Access]:
        """The accesses of these (block, thread) coordinate pairs, in launch order (objects built for them alone)."""
        want = [(np.array(b, np.int64)[:, None], np.array(t, np.int64)[:, None]) for b, t in threads
                if all(isinstance(x, (int, np.integer)) and 0 <= x < 1 << 62 for x in (*b, *t))]   # others: none
        out = []
        for cta, tidx, records in self._batches:
            cta, tidx = np.asarray(cta), np.asarray(tidx)
            mine = np.zeros(cta.shape[1], bool)
            for b, t in want:
                if b.shape[0] == cta.shape[0] and t.shape[0] == tidx.shape[0]:
                    mine |= (cta == b).all(0) & (tidx == t).all(0)
            if not mine.any():
                continue
            picked = []
            for r in records:
                k = np.flatnonzero(mine[r[2]])
                if len(k):
                    picked.append((r[0], r[1], r[2][k], r[3][k], r[4], r[5], r[6][k], r[7][k],
                                   None if r[8] is None else r[8][k]))
            out += _objects(cta, tidx, picked)
        return out

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
            return _one(self._batches[b], r, i - (int(ends[j - 1]) if j else 0))
        return addr, width, kind, access

    def table(self, grid, block) -> "Table":
        """Every access in launch order as columns (blocks and threads as linear indices in this launch)."""
        cols: dict[str, list] = {k: [] for k in Table.FIELDS}
        where = []                      # (batch, record, accesses) of each record, in order
        for bi, (cta, tidx, records) in enumerate(self._batches):
            cta, tidx = np.asarray(cta, np.int64), np.asarray(tidx, np.int64)
            blin = cta[0] + grid[0] * (cta[1] + grid[1] * cta[2])
            tlin = tidx[0] + block[0] * (tidx[1] + block[1] * tidx[2])
            for ri, (ins, space, idx, addrs, width, kind, ep, ws, since) in enumerate(records):
                n = len(idx)
                where.append((bi, ri, n))
                cols["instr"].append(np.full(n, ins, np.int64))
                cols["shared"].append(np.full(n, space == "shared", bool))
                cols["block"].append(blin[idx])
                cols["thread"].append(tlin[idx])
                cols["address"].append(np.asarray(addrs, np.uint64).astype(np.int64))
                cols["width"].append(np.full(n, width, np.int64))
                cols["kind"].append(np.full(n, KINDS.index(kind), np.int8))
                cols["epoch"].append(np.asarray(ep, np.int64))
                cols["wsync"].append(np.asarray(ws, np.int64))
                cols["since"].append(np.full(n, -1, np.int64) if since is None else np.asarray(since, np.int64))
        arrays = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}
        return Table(self, where, **arrays)


@dataclass
class Table:
    """A trace's accesses as arrays in launch order: instruction, shared (else global), linear block and
    thread (within its block), address, width, kind (index in KINDS), the block's epoch, the warp syncs the
    thread completed, since (a cp.async write's epoch at issue, -1 for any other access); access(i) is the
    i-th as an Access."""
    FIELDS = ("instr", "shared", "block", "thread", "address", "width", "kind", "epoch", "wsync", "since")
    trace: AccessTrace
    where: list
    instr: np.ndarray
    shared: np.ndarray
    block: np.ndarray
    thread: np.ndarray
    address: np.ndarray
    width: np.ndarray
    kind: np.ndarray
    epoch: np.ndarray
    wsync: np.ndarray
    since: np.ndarray

    def __len__(self) -> int:
        return len(self.instr)

    def access(self, i: int) -> Access:
        for bi, ri, n in self.where:
            if i < n:
                batch = self.trace._batches[bi]
                return _one(batch, batch[2][ri], i)
            i -= n
        raise IndexError(i)


def _one(batch, r, k: int) -> Access:
    """The k-th access of record r of that batch."""
    cta, tidx, _ = batch
    return _objects(cta, tidx, [(r[0], r[1], r[2][k:k + 1], r[3][k:k + 1], r[4], r[5], r[6][k:k + 1],
                                 r[7][k:k + 1], None if r[8] is None else r[8][k:k + 1])])[0]


def _objects(cta: np.ndarray, tidx: np.ndarray, records: list) -> list[Access]:
    out = []
    for ins, space, idx, addrs, width, kind, ep, ws, since in records:
        sl = [None] * len(idx) if since is None else since.tolist()
        blocks = map(tuple, np.asarray(cta)[:, idx].T.tolist())
        threads = map(tuple, np.asarray(tidx)[:, idx].T.tolist())
        for b, t, a, e, w, s in zip(blocks, threads, addrs.tolist(), ep.tolist(), ws.tolist(), sl):
            out.append(Access(b, t, ins, int(a), width, kind, space, int(e), int(w), s))
    return out
