"""Register storage of the PTX emulator's machine: one array per register over the threads of a batch,
made when first used; a register whose value is the same in every thread may be held as one 0-d
value (a scalar), read as such only by instructions that take scalars (`scalar_ok`) and made a full
array for any other reader. A compacted sub-run's registers (Gathered) are gathered from the batch's
when first used, and what it wrote goes back lazily (`scatter`), as do the values a write gives some threads
alone (a wgmma's accumulators of one warpgroup: EmuOpsMixin.put_at)."""
from __future__ import annotations

import numpy as np


class _Scalars(dict):
    """Reads that give a full array unless scalar_ok (a 0-d value then stays one)."""
    scalar_ok = False
    n = 0

    def raw(self, name):
        """The stored value: a full array or a 0-d one."""
        return dict.__getitem__(self, name)

    def __getitem__(self, name):
        v = dict.__getitem__(self, name)
        if v.ndim == 0 and not self.scalar_ok:
            v = np.full(self.n, v, v.dtype)
            dict.__setitem__(self, name, v)
        return v

    def full(self, name) -> np.ndarray:
        v = dict.__getitem__(self, name)
        return np.full(self.n, v, v.dtype) if v.ndim == 0 else v


class Registers(_Scalars):
    """The batch's registers. What a compacted sub-run (or put_at) wrote is scattered in only when the register
    is next read: a register the batch never reads again costs nothing."""

    def __init__(self, dtypes: dict, n: int):
        super().__init__()
        self.dtypes, self.n, self.pending = dtypes, n, {}

    def __missing__(self, name):
        base, parts = self.pending.pop(name, (None, ()))
        if base is None:
            v = np.zeros(self.n, self.dtypes[name])
        else:
            v = np.full(self.n, base, base.dtype) if base.ndim == 0 else base.copy()
        for ids, vals in parts:
            v[ids] = vals
        dict.__setitem__(self, name, v)
        return v

    def __setitem__(self, name, v):
        self.pending.pop(name, None)
        dict.__setitem__(self, name, v)

    def scatter(self, name, ids, vals):
        """Register name takes vals at threads ids (the rest keep their values)."""
        if name in self.pending:
            self.pending[name][1].append((ids, vals))
        else:
            self.pending[name] = (dict.pop(self, name, None), [(ids, vals)])


class Gathered(_Scalars):
    """A compacted sub-run's registers: each gathered from the batch's on first use; `written` names
    those the sub-run assigned."""

    def __init__(self, full: _Scalars, ids: np.ndarray):
        super().__init__()
        self.whole, self.ids, self.written, self.dtypes, self.n = full, ids, set(), full.dtypes, len(ids)

    def __missing__(self, name):
        v = self.whole.raw(name)
        if v.ndim:
            v = v[self.ids]
        dict.__setitem__(self, name, v)
        return v

    def __setitem__(self, name, v):
        self.written.add(name)
        dict.__setitem__(self, name, v)

    def scatter(self, name, ids, vals):
        v = self.full(name).copy()
        v[ids] = vals
        self[name] = v
