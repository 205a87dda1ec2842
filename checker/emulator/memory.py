"""Loads, stores and atomics of the PTX emulator: address computation per state space, bounds and
alignment checks (through the machine's mem_locate), vector widths, and atomics applied in thread order
(or a seeded order, to show results that depend on it)."""
from __future__ import annotations

import numpy as np

from kreg.checker.ptx import parse as P
from kreg.checker.emulator.ops import CLUSTER_SHIFT, DT, UINT, _ftz32, op
from kreg.checker.emulator import fpround as F


def _width(t):
    return max(P.TYPES[t] // 8, 1)


def _lanes(self, m):
    if m is not None:
        return np.flatnonzero(m)
    every = self._cache.get("lanes")
    if every is None:
        every = self._cache["lanes"] = np.arange(self.N)
        every.flags.writeable = False
    return every


def _space(ins):
    if "shared::cluster" in ins.mods:
        return "shared::cluster"
    if "shared::cta" in ins.mods:
        return "shared"
    s = ins.space
    if s is None:
        return "generic"
    return "global" if s == "const" else s


def _addresses(self, a: P.Addr, space, idx):
    off = np.uint64(a.offset & 0xFFFFFFFFFFFFFFFF)
    if a.base is None:
        return np.full(len(idx), off, np.uint64)
    if isinstance(a.base, P.Sym):
        return np.full(len(idx), np.uint64(self.sym_addr(a.base.name, space)) + off, np.uint64)
    base = self.regs[a.base.name].astype(np.uint64, copy=False)
    if base.ndim == 0:
        return np.full(len(idx), base + off, np.uint64)
    return (base if len(idx) == self.N else base[idx]) + off


def _param_load(self, ins, m):
    a = ins.args[1]
    if not isinstance(a, P.Addr) or not isinstance(a.base, P.Sym) or a.base.name not in self.poffs:
        raise self.err("unsupported", "ld.param from anything but a kernel param symbol")
    t = ins.type
    w, n = _width(t), ins.vector
    start = self.poffs[a.base.name] + a.offset
    if start < 0 or start + w * n > len(self.params):
        raise self.err("out-of-bounds", "ld.param outside the kernel params")
    raw = np.frombuffer(self.params[start:start + w * n], UINT[8 * w])
    dests = ins.args[0].items if isinstance(ins.args[0], P.Vec) else (ins.args[0],)
    for j, d in enumerate(dests):
        self.put(d, raw[j:j + 1].view(DT[t])[0] if t not in ("pred",) else raw[j] != 0, t, m)


@op("ld", "ldu")
def _ld(self, ins, m, *_):
    space = _space(ins)
    if space == "param":
        return _param_load(self, ins, m)
    t = ins.type
    w, n = _width(t), ins.vector
    idx = _lanes(self, m)
    addrs = _addresses(self, ins.args[1], space, idx)
    ut = UINT[8 * w]
    groups = self.mem_locate(ins, space, addrs, idx, w * n, "read")
    if len(groups) == 1 and len(groups[0][1]) == len(idx) and (n == 1 or len(groups[0][0]) % (w * n) == 0):
        buf, pos, off, sp, ta = groups[0]      # one buffer for every lane: read whole vectors at once
        if n == 1:
            out = buf.view(ut)[off // w][:, None]
        elif not (off % (w * n)).any():
            out = buf.view(ut).reshape(-1, n)[off // (w * n)]
        else:                                  # (a vector not aligned to its size: alignment checks off)
            out = buf.view(ut)[(off // w)[:, None] + np.arange(n)]
        self.record(ins, sp, idx[pos], ta, w * n, "read")
        groups = ()
    else:
        out = np.zeros((len(idx), n), ut)
    for buf, pos, off, sp, ta in groups:
        e = off // w
        view = buf.view(ut)
        out[pos] = view[e[:, None] + np.arange(n)] if n > 1 else view[e][:, None]
        self.record(ins, sp, idx[pos], ta, w * n, "read")
    dests = ins.args[0].items if isinstance(ins.args[0], P.Vec) else (ins.args[0],)
    for j, d in enumerate(dests):
        if m is None:
            vals = out[:, j]
        else:
            vals = np.zeros(self.N, ut)
            vals[idx] = out[:, j]
        self.put(d, vals.view(DT[t]) if t in DT else vals, t, m)


@op("st")
def _st(self, ins, m, *_):
    space = _space(ins)
    if space == "param":
        raise self.err("unsupported", "st.param")
    t = ins.type
    w, n = _width(t), ins.vector
    idx = _lanes(self, m)
    addrs = _addresses(self, ins.args[0], space, idx)
    ut = UINT[8 * w]
    srcs = ins.args[1].items if isinstance(ins.args[1], P.Vec) else (ins.args[1],)
    vals = np.stack([np.broadcast_to(np.asarray(self.get(s, t)).view(ut) if np.asarray(self.get(s, t)).dtype.itemsize == w
                                     else np.asarray(self.get(s, t)).astype(ut), (self.N,))[idx] for s in srcs], axis=1)
    for buf, pos, off, sp, ta in self.mem_locate(ins, space, addrs, idx, w * n, "write"):
        e = off // w
        view = buf.view(ut)
        if n > 1:
            view[e[:, None] + np.arange(n)] = vals[pos]
        else:
            view[e] = vals[pos, 0]
        self.record(ins, sp, idx[pos], ta, w * n, "write")


def _atomic_fn(kind, t, ftz):
    isf = t[0] == "f" or t.startswith("bf")

    def add(old, b, c):
        if t == "f32":
            r = _ftz32(_ftz32(old) + _ftz32(b)) if ftz else old + b
            return F.canon_f32(r)
        if t in ("f16", "bf16"):
            return F.add_exact(F.to_f64(old, t), F.to_f64(b, t), t)
        if t in ("f16x2", "bf16x2"):
            fmt = t[:-2]
            o, bb = np.asarray(old).astype(np.uint32), np.asarray(b).astype(np.uint32)
            halves = [F.add_exact(F.to_f64((x >> np.uint32(s)) & np.uint32(0xFFFF), fmt),
                                  F.to_f64((bb >> np.uint32(s)) & np.uint32(0xFFFF), fmt), fmt).astype(np.uint32)
                      for x, s in ((o, 0), (o, 16))]
            return halves[0] | (halves[1] << np.uint32(16))
        return old + b

    if kind == "add":
        return add
    if kind in ("min", "max"):
        if isf:
            raise NotImplementedError
        return lambda o, b, c: np.minimum(o, b) if kind == "min" else np.maximum(o, b)
    if kind == "exch":
        return lambda o, b, c: b
    if kind == "cas":
        return lambda o, b, c: np.where(o == b, c, o)
    if kind == "and":
        return lambda o, b, c: o & b
    if kind == "or":
        return lambda o, b, c: o | b
    if kind == "xor":
        return lambda o, b, c: o ^ b
    if kind == "inc":
        return lambda o, b, c: np.where(o >= b, o.dtype.type(0), o + o.dtype.type(1))
    if kind == "dec":
        return lambda o, b, c: np.where((o == 0) | (o > b), b, o - o.dtype.type(1))
    raise NotImplementedError


SCAN = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
        "xor": np.bitwise_xor}


def _colliding(view, e, pos, b, c, old_all, fn, kind, t, dt, ut, rng=None):
    """Apply one atomic per lane, lanes in thread order (or in an order drawn from rng), where several
    lanes share addresses. Associative integer ops and f32/f64 adds are sequential scans
    (np.ufunc.accumulate runs left to right); the rest go one lane at a time."""
    if rng is None:
        order = np.argsort(e, kind="stable")
    else:
        perm = rng.permutation(len(e))
        order = perm[np.argsort(e[perm], kind="stable")]
    es, ps = e[order], pos[order]
    starts = np.flatnonzero(np.r_[True, es[1:] != es[:-1]])
    ends = np.r_[starts[1:], len(es)]
    is_int = t[0] in "us" or (t[0] == "b" and t[1:].isdigit())
    scan = SCAN.get(kind) if (is_int or (kind == "add" and t in ("f32", "f64"))) else None
    for s0, s1 in zip(starts.tolist(), ends.tolist()):
        a = int(es[s0])
        lanes = ps[s0:s1]
        init = view[a:a + 1].copy()
        if scan is not None:
            seq = np.concatenate([init.view(dt), b[lanes].astype(dt)])
            run = scan.accumulate(seq, dtype=dt)
            if t == "f32":
                if (np.abs(seq) < np.float32(1.1754944e-38)).any() & (seq != 0).any() or \
                        ((np.abs(run) < np.float32(1.1754944e-38)) & (run != 0)).any():
                    scan = None       # subnormals: flush-to-zero at each step, one lane at a time below
                else:
                    run = _canon_run(run)
            if scan is not None:
                old_all[lanes] = run[:-1].view(ut)
                view[a] = run[-1:].view(ut)[0]
                continue
        if kind in ("cas", "exch", "inc", "dec"):       # bit-pattern ops on Python ints
            cur = int(view[a])
            bl, cl = b[lanes].view(ut).tolist(), c[lanes].view(ut).tolist()
            olds = []
            for bb, cc in zip(bl, cl):
                olds.append(cur)
                if kind == "cas":
                    cur = cc if cur == bb else cur
                elif kind == "exch":
                    cur = bb
                elif kind == "inc":
                    cur = 0 if cur >= bb else cur + 1
                else:
                    cur = bb if cur == 0 or cur > bb else cur - 1
            old_all[lanes] = np.array(olds, dtype=np.uint64).astype(ut)
            view[a] = ut(cur)
            continue
        for p in lanes.tolist():
            old = view[a:a + 1].copy()
            new = np.asarray(fn(old.view(dt), b[p:p + 1], c[p:p + 1])).astype(dt)
            view[a] = new.view(ut)[0]
            old_all[p] = old[0]


def _canon_run(run):
    return F.canon_f32(run)


@op("atom", "red")
def _atom(self, ins, m, *_):
    space = _space(ins)
    t = ins.type
    kind = next((x for x in ins.mods if x in ("add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec")),
                None)
    if kind is None or ins.vector > 1 or t in ("f16x2", "bf16x2") and kind != "add" or ins.has("noftz") and t == "f32":
        raise self.err("unsupported", f"{ins.op}.{'.'.join(ins.mods)}")
    try:
        fn = _atomic_fn(kind, t, t == "f32")
    except NotImplementedError:
        raise self.err("unsupported", f"{ins.op} .{kind} on .{t}") from None
    has_d = ins.op == "atom"
    a_arg = ins.args[1] if has_d else ins.args[0]
    srcs = ins.args[2:] if has_d else ins.args[1:]
    w = _width(t)
    ut = UINT[8 * w]
    dt = DT[t]
    idx = _lanes(self, m)
    addrs = _addresses(self, a_arg, space, idx)
    b = np.broadcast_to(np.asarray(self.get(srcs[0], t)), (self.N,))[idx]
    c = np.broadcast_to(np.asarray(self.get(srcs[1], t)), (self.N,))[idx] if len(srcs) > 1 else b
    old_all = np.zeros(len(idx), ut)
    for buf, pos, off, sp, ta in self.mem_locate(ins, space, addrs, idx, w, "atomic"):
        view = buf.view(ut)
        e = off // w
        if len(np.unique(e)) == len(e):
            old = view[e].copy()
            new = fn(old.view(dt), b[pos], c[pos])
            view[e] = np.asarray(new).astype(dt).view(ut) if np.asarray(new).dtype != dt else np.asarray(new).view(ut)
            old_all[pos] = old
        else:                      # colliding addresses: in thread order, per address
            _colliding(view, e, pos, b, c, old_all, fn, kind, t, dt, ut, getattr(self, "atomic_rng", None))
        self.record(ins, sp, idx[pos], ta, w, "atomic")
    if has_d:
        if m is None:
            vals = old_all
        else:
            vals = np.zeros(self.N, ut)
            vals[idx] = old_all
        self.put(ins.args[0], vals.view(dt), t, m)



@op("mapa")
def _mapa(self, ins, m, *_):
    """mapa.shared::cluster.{u32,u64} d, a, rank: this block's shared::cta address a as the
    shared::cluster address of the same offset in block `rank` of the cluster ((1 + rank) << 24 | a;
    ops.CLUSTER_SHIFT). The generic form is not emulated."""
    if "shared::cluster" not in ins.mods or ins.type not in ("u32", "u64", "b32", "b64"):
        raise self.err("unsupported", f"mapa.{'.'.join(ins.mods)}")
    a = np.broadcast_to(np.asarray(self.get(ins.args[1], ins.type)).astype(np.int64), (self.N,))
    r = np.broadcast_to(np.asarray(self.get(ins.args[2], "u32")).astype(np.int64), (self.N,))
    act = np.ones(self.N, bool) if m is None else m
    if ((a >= (1 << CLUSTER_SHIFT)) & act).any() or ((r >= self.csize) & act).any():
        j = int(np.flatnonzero(((a >= (1 << CLUSTER_SHIFT)) | (r >= self.csize)) & act)[0])
        raise self.err("out-of-bounds", f"mapa of shared address {int(a[j])} to rank {int(r[j])} of a cluster "
                       f"of {self.csize} blocks")
    self.put(ins.args[0], ((r + 1) << CLUSTER_SHIFT | a).astype(UINT[P.TYPES[ins.type]]).view(DT[ins.type]), ins.type, m)
