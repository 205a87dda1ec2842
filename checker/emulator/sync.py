"""Control flow and synchronisation in the PTX emulator: branches, exits, traps, bar.sync, and the
warp-synchronous instructions (shfl, vote, match, redux, activemask, bar.warp.sync), which wait until
every live lane of their member mask has arrived."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from kreg.checker.ptx import parse as P
from kreg.checker.emulator.ops import DT, op


# ---- control flow -----------------------------------------------------------------------------------

@op("bra")
def _bra(self, ins, m, act, pc0):
    tgt = self.k.labels[ins.args[0].name]
    ex = act if m is None else m
    self.pc = np.where(ex, tgt, np.where(act, pc0 + 1, self.pc))
    return True


@op("ret", "exit")
def _ret(self, ins, m, act, pc0):
    ex = act if m is None else m
    self.alive = self.alive & ~ex
    self.pc = np.where(act & ~ex, pc0 + 1, self.pc)
    return True


@op("trap")
def _trap(self, ins, m, act, pc0):
    raise self.err("trap", "the kernel executed trap")


@op("membar", "fence", "nanosleep", "prefetch", "prefetchu", "griddepcontrol")
def _nop(self, ins, m, *_):
    pass


@op("bar", "barrier")
def _bar(self, ins, m, act, pc0):
    if ins.has("warp"):
        return _warp_sync(self, ins, m, act, pc0, _bar_warp)
    if ins.has("cluster"):
        return _bar_cluster(self, ins, m, act, pc0)
    if not (ins.has("sync") or ins.mods == () or ins.has("cta") and not ins.has("arrive")) or ins.has("red", "arrive"):
        raise self.err("unsupported", f"{ins.op}.{'.'.join(ins.mods)}")
    if len(ins.args) > 1:
        count = self.get(ins.args[1], "u32")
        if not np.all(np.asarray(count) >= -(-self.tpb // 32) * 32):
            raise self.err("unsupported", "bar.sync with a thread count below the block size")
    ex = act if m is None else m
    self.bwait = self.bwait | ex
    self.pc = np.where(act, pc0 + 1, self.pc)
    return True


def _bar_cluster(self, ins, m, act, pc0):
    """barrier.cluster.arrive counts an arrival of each executing thread; barrier.cluster.wait holds
    a thread until every live thread of its cluster has arrived as often as it has (the machine's
    _unblock releases it). Memory is sequentially consistent here, so .release / .acquire / .relaxed
    change nothing in the emulator."""
    ex = act if m is None else m
    if ins.has("arrive") and not ins.has("wait"):
        self.carr = self.carr + ex
    elif ins.has("wait") and not ins.has("arrive"):
        if (ex & (self.carr == 0)).any():
            t = int(np.flatnonzero(ex & (self.carr == 0))[0])
            raise self.err("barrier-divergence", "barrier.cluster.wait before any barrier.cluster.arrive", t)
        self.cneed = np.where(ex, self.carr, self.cneed)
        self.cwait = self.cwait | ex
    else:
        raise self.err("unsupported", f"{ins.op}.{'.'.join(ins.mods)}")
    self.pc = np.where(act, pc0 + 1, self.pc)
    return True


# ---- warp-synchronous instructions --------------------------------------------------------------------

def _warp_sync(self, ins, m, act, pc0, body, member=None):
    """Run body for the lanes whose member mask (the last operand, or `member`) has arrived."""
    ex = act if m is None else m
    if m is None and self.upc is not None and self._dense:
        # converged whole warps (run's fast path): every lane of every warp arrives, all are ready
        self._stalled, self._m = False, act
        body(self, ins, None, act)
        return True
    if member is None:
        member = self.get(ins.args[-1], "b32") if body is not _activemask else np.uint32(0xFFFFFFFF)
    ready = self.warp_ready(ex, member) if body is not _activemask else ex
    waiting = ex & ~ready
    self._stalled = not ready.any()
    self.swait = (self.swait & ~act) | waiting
    if ready.any():
        full = None if ready.all() else ready
        self._m = ready
        body(self, ins, full, ready)
    if self.upc is None:                           # (converged: run's fast path moves the PC itself)
        self.pc = np.where(act & ~waiting, pc0 + 1, self.pc)
    return True


def _bar_warp(self, ins, m, ready):
    self.wsync = self.wsync + ready


def _one_value(x):
    """x as one scalar where all its elements are equal (the same results, broadcast), else x."""
    x = np.asarray(x)
    if x.ndim == 1 and len(x) and x[0] == x[-1] and (x == x[0]).all():
        return x[0]
    return x


def _shfl_lanes(mode, lane, b, c):
    """The source lane of each lane (its own where out of range) and whether it was in range."""
    cval, seg = c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & seg) | (cval & ~seg)
    min_lane = lane & seg
    if mode == "up":
        j = lane - b
        p = j >= max_lane
    elif mode == "down":
        j = lane + b
        p = j <= max_lane
    elif mode == "bfly":
        j = lane ^ b
        p = j <= max_lane
    else:
        j = min_lane | (b & ~seg)
        p = j <= max_lane
    return np.where(p, j, lane), p


@lru_cache(maxsize=64)
def _lane_pattern(n: int, mode: str, b: int, c: int):
    """For n threads in whole warps (thread t: lane t % 32 of warp t // 32): the thread each reads
    from and whether its source lane was in range (read-only, shared by the batches of a launch)."""
    j, p = _shfl_lanes(mode, np.arange(32, dtype=np.int64), np.int64(b), np.int64(c))
    t = np.arange(n)
    src, ok = t - t % 32 + j[t % 32], p[t % 32]
    src.flags.writeable = ok.flags.writeable = False
    return src, ok


def _shfl_body(self, ins, m, ready):
    mode = next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))
    a = np.asarray(self.get(ins.args[1], "b32"))
    a = np.broadcast_to(a, (self.N,))
    b = _one_value(self.get(ins.args[2], "u32")).astype(np.int64) & 0x1F
    c = _one_value(self.get(ins.args[3], "u32")).astype(np.int64)
    if self._dense and np.ndim(b) == 0 and np.ndim(c) == 0:
        # one lane pattern for every warp: source lanes and in-range flags of lanes 0..31, made once
        pat = _lane_pattern(self.N, mode, int(b), int(c))
        val, p = a[pat[0]], pat[1]
    else:
        lane = self._cache.get("lane64")
        if lane is None:
            lane = self._cache["lane64"] = self.lane.astype(np.int64)
        j, p = _shfl_lanes(mode, lane, b, c)
        val = self.warp_gather(a, j)
    d = ins.args[0]
    if isinstance(d, P.PredPair):
        self.put(d.a, val, "b32", m)
        self.put(d.b, np.broadcast_to(p, (self.N,)), "pred", m)
    else:
        self.put(d, val, "b32", m)


@op("shfl")
def _shfl(self, ins, m, act, pc0):
    if not ins.has("sync"):
        raise self.err("unsupported", "shfl without .sync")
    return _warp_sync(self, ins, m, act, pc0, _shfl_body)


def _vote_body(self, ins, m, ready):
    kind = next(x for x in ins.mods if x in ("all", "any", "uni", "ballot"))
    p = np.broadcast_to(np.asarray(self.get(ins.args[1], "pred"), bool), (self.N,))
    member = np.asarray(self.get(ins.args[2], "b32")).astype(np.uint64)
    part = self.warp_bits(ready)[self.warp] & member
    yes = self.warp_bits(ready & p)[self.warp] & member
    if kind == "ballot":
        return self.put(ins.args[0], yes.astype(np.uint32), "b32", m)
    r = {"all": yes == part, "any": yes != 0, "uni": (yes == part) | (yes == 0)}[kind]
    self.put(ins.args[0], r, "pred", m)


@op("vote")
def _vote(self, ins, m, act, pc0):
    if not ins.has("sync"):
        raise self.err("unsupported", "vote without .sync")
    return _warp_sync(self, ins, m, act, pc0, _vote_body)


def _activemask(self, ins, m, ready):
    self.put(ins.args[0], self.warp_bits(ready)[self.warp].astype(np.uint32), "b32", m)


@op("activemask")
def _activemask_op(self, ins, m, act, pc0):
    return _warp_sync(self, ins, m, act, pc0, _activemask)


def _redux_body(self, ins, m, ready):
    kind = next(x for x in ins.mods if x in ("add", "min", "max", "and", "or", "xor"))
    t = ins.type
    v = np.broadcast_to(np.asarray(self.get(ins.args[1], t)), (self.N,))
    ident = {"add": 0, "and": -1, "or": 0, "xor": 0, "min": np.iinfo(DT[t]).max, "max": np.iinfo(DT[t]).min}[kind]
    padded = np.full(self.nwarps * 32, np.array(ident).astype(DT[t]), DT[t])
    padded[self.wpos[ready]] = v[ready]
    grid = padded.reshape(self.nwarps, 32)
    f = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
         "xor": np.bitwise_xor}[kind]
    r = f.reduce(grid, axis=1).astype(DT[t])
    self.put(ins.args[0], r[self.warp], t, m)


def _match_body(self, ins, m, ready):
    t = ins.type
    v = np.broadcast_to(np.asarray(self.get(ins.args[1], t)).astype(np.uint64), (self.N,))
    member = np.broadcast_to(np.asarray(self.get(ins.args[2], "b32")).astype(np.uint64), (self.N,))
    padded = np.zeros(self.nwarps * 32, np.uint64)
    part = np.zeros(self.nwarps * 32, bool)
    padded[self.wpos] = v
    part[self.wpos] = ready
    grid, pgrid = padded.reshape(self.nwarps, 32), part.reshape(self.nwarps, 32)
    eq = (grid[:, :, None] == grid[:, None, :]) & pgrid[:, None, :]          # [warp, lane, other lane]
    masks = (eq.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=2)
    mine = masks.reshape(-1)[self.wpos] & member
    d = ins.args[0]
    if ins.has("any"):
        return self.put(d, mine.astype(np.uint32), "b32", m)
    allmask = self.warp_bits(ready)[self.warp] & member
    same = mine == allmask
    dst, pred = (d.a, d.b) if isinstance(d, P.PredPair) else (d, None)
    self.put(dst, np.where(same, allmask, 0).astype(np.uint32), "b32", m)
    if pred is not None:
        self.put(pred, same, "pred", m)


@op("match")
def _match(self, ins, m, act, pc0):
    return _warp_sync(self, ins, m, act, pc0, _match_body)


@op("dp4a", "dp2a")
def _dp(self, ins, m, *_):
    ta, tb = ins.types[0], ins.types[1]
    a = np.asarray(self.get(ins.args[1], "b32")).astype(np.uint32)
    b = np.asarray(self.get(ins.args[2], "b32")).astype(np.uint32)
    c = np.asarray(self.get(ins.args[3], ins.types[0] if ins.types[0] in ("u32", "s32") else "s32")).astype(np.int64)

    def part(x, i, width, signed):
        v = ((x >> np.uint32(i * width)) & np.uint32((1 << width) - 1)).astype(np.int64)
        return np.where(v >= 1 << (width - 1), v - (1 << width), v) if signed else v
    acc = c
    if ins.op == "dp4a":
        for i in range(4):
            acc = acc + part(a, i, 8, ta == "s32") * part(b, i, 8, tb == "s32")
    else:
        hi = 1 if ins.has("hi") else 0
        for i in range(2):
            acc = acc + part(a, i, 16, ta == "s32") * part(b, 2 * hi + i, 8, tb == "s32")
    self.put(ins.args[0], (acc & 0xFFFFFFFF).astype(np.uint32), "b32", m)


@op("isspacep")
def _isspacep(self, ins, m, *_):
    from kreg.checker.emulator.ops import LOCAL_BASE, SHARED_BASE
    a = np.asarray(self.get(ins.args[1], "u64")).astype(np.uint64)
    space = next(x for x in ins.mods if x in ("global", "shared", "local", "const", "param"))
    in_sh = (a >= np.uint64(SHARED_BASE)) & (a < np.uint64(SHARED_BASE + (1 << 32)))
    in_lo = (a >= np.uint64(LOCAL_BASE)) & (a < np.uint64(LOCAL_BASE + (1 << 32)))
    r = {"shared": in_sh, "local": in_lo, "global": ~(in_sh | in_lo), "const": ~(in_sh | in_lo),
         "param": np.zeros_like(in_sh)}[space]
    self.put(ins.args[0], r, "pred", m)


@op("redux")
def _redux(self, ins, m, act, pc0):
    return _warp_sync(self, ins, m, act, pc0, _redux_body)
