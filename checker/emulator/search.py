"""A bounded search for a concrete violation: run a variant's launches in the emulator at small shapes
inside the op's dims (edge values first: the low end, 1, ragged sizes, powers of two and one past, all
satisfying the op's requirements; index tensors at the low end, the high end and spread over their value
range), with every access traced, and report the first violation as a witness a user can replay: an
access outside every buffer, a write into an input, a block barrier released after some of the block's
threads exited (or threads waiting at different barriers), or two threads' conflicting accesses that
nothing orders. What orders two accesses: program order, a block barrier between them (the block's
epoch), a bar.warp.sync between two lanes of one warp, or a happens-before chain through strong accesses
(atomics, volatile / relaxed / acquire / release loads and stores: each taken as acquire and release on
its address, fences assumed present): generous, so a reported race is one that no synchronisation the
kernel performs could order in this execution. Deterministic: the shapes, fills and step limits are
fixed counts, never the clock. A bounded check refutes; it never proves."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from kreg.registry.schema import DTYPES, Op, Variant

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.bind import bind, buffer_sizes
from kreg.checker.emulator import machine as E

MAX_SHAPES = 40          # shapes tried
MAX_BYTES = 8 << 20      # all buffers of one shape
MAX_THREADS = 4096       # threads of one launch
MAX_STEPS = 100_000      # issue steps of one launch
MAX_TRACE = 400_000      # traced accesses of one launch
HB_THREADS = 2048        # threads of a launch whose vector clocks are kept (strong accesses)
EDGE = (1, 2, 3, 4, 7, 8, 9, 16, 17, 31, 32, 33, 48, 64, 65, 96, 127, 128, 129, 192, 255, 256, 257, 384, 512,
        513, 1024, 1025)
STRONG_MODS = ("volatile", "relaxed", "acquire", "release")
FILLS = ("low", "high", "spread")


@dataclass
class Found:
    prop: str            # the property the violation breaks
    what: str            # one line
    witness: dict


def shapes(op: Op, variant: Variant, limit: int = MAX_SHAPES) -> list[dict[str, int]]:
    """Dims to try (each satisfying the op and fitting MAX_BYTES): the smallest balanced combination of
    every dim's candidates (its low end and the EDGE values in range), then each dim swept through its
    candidates with the others held there, round robin over the dims, then larger balanced combinations."""
    names = sorted(op.dims)
    cands = []
    for d in names:
        lo, hi = op.dims[d]
        cands.append(sorted({lo, *[v for v in EDGE if lo <= v <= hi]}))

    def ok(ix):
        dims = {d: cands[k][i] for k, (d, i) in enumerate(zip(names, ix))}
        if op.dims_ok(dims):
            return None
        try:
            return dims if sum(buffer_sizes(variant, op, dims).values()) <= MAX_BYTES else None
        except Exception:
            return None
    balanced = sorted(itertools.product(*[range(len(c)) for c in cands]), key=lambda ix: (max(ix, default=0), sum(ix), ix))
    base = next((ix for ix in balanced[:4096] if ok(ix)), None)
    if base is None:
        return []
    order = [base]
    sweeps = [[base[:k] + (i,) + base[k + 1:] for i in range(len(c)) if i != base[k]] for k, c in enumerate(cands)]
    for row in itertools.zip_longest(*sweeps):
        order += [ix for ix in row if ix is not None]
    order += balanced[:4096]
    out, seen = [], set()
    for ix in order:
        if ix in seen:
            continue
        seen.add(ix)
        if (dims := ok(ix)) is not None:
            out.append(dims)
            if len(out) >= limit:
                break
    return out


def search(variant: Variant, op: Op, module: P.Module, props: set[str]) -> dict[str, Found]:
    """The first violation found of each property in props (those without one are absent)."""
    found: dict[str, Found] = {}
    valued = [n for n, p in op.params.items() if p.values is not None]
    for dims in shapes(op, variant):
        for fill in (FILLS if valued else FILLS[:1]):
            want = props - set(found)
            if not want:
                return found
            for f in run_at(variant, op, module, dims, fill, want):
                found.setdefault(f.prop, f)
    return found


def run_at(variant, op, module, dims, fill, want) -> list[Found]:
    """The violations of the properties in want that one run at these dims shows (fill: how index
    tensors and valued scalars are set, one of FILLS): what replays a witness."""
    sizes = buffer_sizes(variant, op, dims)
    mem = E.Memory()
    ptrs = {n: mem.alloc(max(sz, 1), n) for n, sz in sizes.items()}
    scalars = {}
    for name, p in op.params.items():
        if p.values is None:
            continue
        lo, hi = int(p.values[0](dims)), int(p.values[1](dims))
        if name in ptrs:
            dt = np.dtype(DTYPES[op.dtype_of(name, variant.types)][1])
            n = sizes[name] // dt.itemsize
            if fill == "low":
                vals = np.full(n, lo)
            elif fill == "high":
                vals = np.full(n, hi)
            else:
                vals = np.random.default_rng(n).integers(lo, hi + 1, n)
            mem.write(ptrs[name], vals.astype(dt).tobytes())
        else:
            scalars[name] = {"low": lo, "high": hi}.get(fill, (lo + hi) // 2)
    try:
        bound = bind(variant, op, module, dims, ptrs, scalars)
    except Exception:
        return []
    ranges = {n: (ptrs[n], sizes[n]) for n in ptrs}
    inputs = {n for n, p in op.params.items() if p.role == "in" and n in ptrs}
    out = []
    for n, b in enumerate(bound):
        if int(np.prod(b.grid)) * int(np.prod(b.block)) > MAX_THREADS:
            return out
        base = {"dims": dict(dims), "inputs": fill, "launch": n, "grid": list(b.grid), "block": list(b.block),
                "bounded": True}
        try:
            res = E.launch(module, b.entry, b.grid, b.block, b.shared, b.args, mem, trace=True,
                           max_steps=MAX_STEPS, max_trace=MAX_TRACE, strict_barriers="barrier_safe" in want)
        except E.EmulatorError as e:
            prop = {"out-of-bounds": "in_bounds", "misaligned": "in_bounds",
                    "barrier-divergence": "barrier_safe"}.get(e.kind)
            if prop in want and e.block is not None:
                w = dict(base, blocks=[list(e.block)], threads=[list(e.thread)], instrs=_instrs(e.instr))
                if e.address is not None:
                    w.update(_locate(e.address, 0, ranges, e.buffer))
                out.append(Found(prop, str(e), w))
            return out
        kernel = module.kernel(b.entry)
        t = res.trace.table(b.grid, b.block) if want & {"read_only", "race_free"} else None
        if "read_only" in want and (a := _input_write(t, ranges, inputs)) is not None:
            hit = _inside(a, ranges, inputs)
            w = dict(base, blocks=[list(a.block)], threads=[list(a.thread)], instrs=_instrs(kernel.instrs[a.instr]),
                     buffer=hit, buffer_bytes=ranges[hit][1],
                     addresses=[{"offset": a.address - ranges[hit][0], "bytes": a.width, "kind": a.kind}])
            out.append(Found("read_only", f"{a.kind} into the input {hit}", w))
        if "race_free" in want and (r := races(t, kernel, b.grid, b.block)) is not None:
            a, c = r
            w = dict(base, blocks=[list(a.block), list(c.block)], threads=[list(a.thread), list(c.thread)],
                     instrs=_instrs(kernel.instrs[a.instr]) + _instrs(kernel.instrs[c.instr]))
            name = "shared" if a.space == "shared" else _owner(a.address, ranges)
            if a.space == "shared":
                w.update(buffer="shared", addresses=[{"offset": x.address, "bytes": x.width, "kind": x.kind} for x in (a, c)])
            elif name:
                w.update(buffer=name, buffer_bytes=ranges[name][1],
                         addresses=[{"offset": x.address - ranges[name][0], "bytes": x.width, "kind": x.kind} for x in (a, c)])
            out.append(Found("race_free", f"{a.kind}/{c.kind} conflict on {name or a.space} that nothing orders", w))
    return out


def _instrs(ins) -> list[dict]:
    return [] if ins is None else [{"index": ins.index, "text": ins.text.strip(), "line": ins.line}]


def _owner(addr, ranges):
    for n, (lo, sz) in ranges.items():
        if lo <= addr < lo + sz:
            return n
    return None


def _input_write(t, ranges, inputs):
    """The first global write or atomic (in launch order) that overlaps an input buffer, or None."""
    hit = np.zeros(len(t), bool)
    for n in sorted(inputs):
        lo, sz = ranges[n]
        hit |= (t.address < lo + sz) & (lo < t.address + t.width)
    hit &= (t.kind != 0) & ~t.shared
    return t.access(int(np.flatnonzero(hit)[0])) if hit.any() else None


def _inside(a, ranges, names):
    for n in names:
        lo, sz = ranges[n]
        if a.address < lo + sz and lo < a.address + a.width:
            return n
    return None


def _locate(addr, width, ranges, nearest):
    n = nearest if nearest in ranges else min(ranges, key=lambda k: abs(addr - ranges[k][0]), default=None)
    if n is None:
        return {}
    return {"buffer": n, "buffer_bytes": ranges[n][1],
            "addresses": [{"offset": addr - ranges[n][0], "bytes": width, "kind": "access"}]}


def is_strong(ins: P.Instr) -> bool:
    """An access that synchronises: an atomic, or a volatile / relaxed / acquire / release load or store."""
    return ins.op in ("atom", "red") or ins.op in ("ld", "st") and ins.has(*STRONG_MODS)


def races(t, kernel: P.Kernel, grid, block):
    """The first pair (earlier, later) of conflicting accesses by two threads that nothing orders in this
    execution (the trace's order), or None: races_in_order's answer, computed over the trace's arrays (t, its
    table) where the launch has no strong access (no vector clocks to keep)."""
    strong = np.array(sorted(i.index for i in kernel.instrs if is_strong(i)), np.int64)
    if np.isin(t.instr, strong).any():
        return races_in_order(t.trace.accesses(), kernel, grid, block)
    got = _first_unordered(t, int(np.prod(block)))
    return None if got is None else (t.access(got[0]), t.access(got[1]))


def _first_unordered(t, tpb: int):
    """races_in_order without strong accesses, over arrays: per unit of bytes (the accesses sorted by unit,
    then launch order) each access against the last write before it, and each thread's last read before a
    write against that write (the reads it replaced were its own, ordered before it); of the unordered pairs,
    the one races_in_order meets first: the earliest later access, then the lowest unit, the write before the
    reads, the reads in the order their threads first read the unit since that write. Indices into t."""
    n = len(t)
    if n == 0:
        return None
    unit = int(np.gcd.reduce(np.concatenate([t.address, t.width]))) or 1
    cnt = t.width // unit
    src = np.repeat(np.arange(n), cnt)
    first = np.cumsum(cnt) - cnt
    u = np.repeat(t.address // unit, cnt) + (np.arange(len(src)) - np.repeat(first, cnt))
    sk = np.where(t.shared, t.block, -1)[src]
    order = np.lexsort((src, u, sk))
    src, u, sk = src[order], u[order], sk[order]
    m = len(src)
    pos = np.arange(m)
    new = np.ones(m, bool)
    new[1:] = (sk[1:] != sk[:-1]) | (u[1:] != u[:-1])
    gstart = np.maximum.accumulate(np.where(new, pos, 0))
    grp = np.cumsum(new) - 1
    isw = t.kind[src] != 0
    lw = np.empty(m, np.int64)
    lw[0] = -1
    lw[1:] = np.maximum.accumulate(np.where(isw, pos, -1))[:-1]
    a_later = np.flatnonzero(lw >= gstart)
    a_earlier = lw[a_later]
    # reads: each thread's last read of the unit between two writes, against the write that ends the run
    gend = np.flatnonzero(np.append(new[1:], True))[grp]       # each group's last position
    nw = np.minimum.accumulate(np.where(isw, pos, m)[::-1])[::-1]
    gid = t.block * tpb + t.thread
    r = np.flatnonzero(~isw)
    cw = np.cumsum(isw)[r]
    rg = gid[src[r]]
    ro = np.lexsort((r, rg, cw, grp[r]))
    r, cw, rg = r[ro], cw[ro], rg[ro]
    key_new = np.ones(len(r), bool)
    key_new[1:] = (grp[r][1:] != grp[r][:-1]) | (cw[1:] != cw[:-1]) | (rg[1:] != rg[:-1])
    run_first = r[key_new]
    run_last = r[np.append(key_new[1:], True)]
    ending = nw[run_last]
    ok = ending <= gend[run_last]
    b_earlier, b_later, b_rank = run_last[ok], ending[ok], src[run_first[ok]]
    p = np.concatenate([a_earlier, b_earlier])
    c = np.concatenate([a_later, b_later])
    kind = np.concatenate([np.zeros(len(a_later), np.int64), np.ones(len(b_later), np.int64)])
    rank = np.concatenate([np.zeros(len(a_later), np.int64), b_rank])
    pi, ci = src[p], src[c]
    eff = np.where(t.since[ci] >= 0, t.since[ci], t.epoch[ci])
    same_block = t.block[pi] == t.block[ci]
    ordered = (gid[pi] == gid[ci]) | (same_block & (t.epoch[pi] < eff)) | \
        (same_block & (t.thread[pi] // 32 == t.thread[ci] // 32) & (t.wsync[pi] != t.wsync[ci]))
    ordered |= (t.kind[pi] == 2) & (t.kind[ci] == 2)
    bad = np.flatnonzero(~ordered)
    if len(bad) == 0:
        return None
    k = bad[np.lexsort((rank[bad], kind[bad], u[c[bad]], ci[bad]))[0]]
    return int(pi[k]), int(ci[k])


def races_in_order(acc: list, kernel: P.Kernel, grid, block):
    """The first pair (earlier, later) of conflicting accesses by two threads that nothing orders in
    this execution (the trace's order), or None. FastTrack-style: per byte the last write and the reads
    since; vector clocks only where the kernel has strong accesses."""
    tpb = block[0] * block[1] * block[2]
    strong = {i.index for i in kernel.instrs if is_strong(i)}
    hb = any(a.instr in strong for a in acc)
    nthreads = int(np.prod(grid)) * tpb
    if hb and nthreads > HB_THREADS:
        return None
    C = np.zeros((nthreads, nthreads), np.int32) if hb else None
    if hb:
        np.fill_diagonal(C, 1)
    sync_vc: dict = {}
    block_epoch: dict = {}
    last_w: dict = {}
    reads: dict = {}

    def gid(a):
        b = a.block[0] + grid[0] * (a.block[1] + grid[1] * a.block[2])
        return b, b * tpb + a.thread[0] + block[0] * (a.thread[1] + block[1] * a.thread[2])

    def ordered(p, cur):
        (pa, pb, pg, pc), (ca, cb, cg, _) = p, cur
        if pg == cg:
            return True
        if pb == cb and pa.epoch < (ca.epoch if ca.since is None else ca.since):
            return True     # a cp.async write is unordered from its issue to where it lands
        if pb == cb and (pg - pb * tpb) // 32 == (cg - cb * tpb) // 32 and pa.wsync != ca.wsync:
            return True
        return hb and C[cg, pg] >= pc

    def conflict(p, cur):
        pa, ca = p[0], cur[0]
        if pa.kind == "read" and ca.kind == "read" or pa.kind == "atomic" and ca.kind == "atomic":
            return False
        if pa.instr in strong and ca.instr in strong:
            return False
        return not ordered(p, cur)

    # bytes are tracked in units that every access covers whole (the gcd of all addresses and widths):
    # every byte of a unit has the same history, so a unit stands for its bytes
    unit = math.gcd(*{a.address for a in acc}, *{a.width for a in acc}) or 1
    for a in acc:
        b, g = gid(a)
        if hb and a.epoch > block_epoch.get(b, 0):        # the block passed barriers: join its threads' clocks
            rows = slice(b * tpb, (b + 1) * tpb)
            j = C[rows].max(axis=0)
            C[rows] = np.maximum(C[rows], j)
            C[rows, rows] += np.eye(tpb, dtype=np.int32)
        block_epoch[b] = max(block_epoch.get(b, 0), a.epoch)
        cur = (a, b, g, int(C[g, g]) if hb else 0)
        space = (a.space, b if a.space == "shared" else -1)
        seen: dict = {}       # the earlier accesses already checked against this one (each covers many bytes)
        for x in range(a.address // unit, (a.address + a.width) // unit):
            key = (space, x)
            w = last_w.get(key)
            if w is not None and id(w) not in seen:
                seen[id(w)] = w
                if conflict(w, cur):
                    return w[0], a
            if a.kind == "read":
                reads.setdefault(key, {})[g] = cur
            else:
                for r in reads.pop(key, {}).values():
                    if id(r) not in seen:
                        seen[id(r)] = r
                        if conflict(r, cur):
                            return r[0], a
                last_w[key] = cur
        if hb and a.instr in strong:                       # acquire and release on its address
            key = (space, a.address)
            s = sync_vc.get(key)
            if s is not None:
                np.maximum(C[g], s, out=C[g])
            sync_vc[key] = C[g].copy() if s is None else np.maximum(s, C[g])
            C[g, g] += 1
    return None
