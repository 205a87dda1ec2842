"""Symbolic execution of one PTX kernel for one symbolic thread, with z3 bitvectors of the registers'
real widths. Branches are explored on both sides and merged at immediate post-dominators; natural
loops are summarised (checker/prover/loops.py). The result is a list of memory-access records, barrier-
divergence records and side obligations, each guarded by the path condition under which it happens.
Running it twice (thread suffixes "A" and "B") gives the two-thread reduction: symbols that belong to
a thread carry its suffix, shape variables and input-buffer contents (uninterpreted functions) do not."""
from __future__ import annotations

import struct

import z3

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.cfg import (IrreducibleFlow, Loop, exit_ipdom, find_loops, is_block_collective, is_warp_sync,
                                  sync_branches)
from kreg.checker.prover.loops import summarize
from kreg.checker.prover.semantics import execute
from kreg.checker.prover.state import Access, BranchCheck, State, Trace, Unsupported, bv, fit, merge_pending

MAX_STEPS = 20000


class Executor:
    def __init__(self, kernel: P.Kernel, module: P.Module, env: "LaunchEnv", thread: str):
        self.k, self.m, self.env, self.t = kernel, module, env, thread
        self.trace = Trace()
        self.counter = 0
        self.created: list = []
        self.alts: list = []          # ("alt", i) tags: a pointer into one of several buffers
        try:
            self.loops = find_loops(kernel)
        except IrreducibleFlow as e:
            raise Unsupported(str(e)) from None
        ipdom = exit_ipdom(kernel)
        self.bar_branches = sync_branches(kernel, ipdom, is_block_collective)
        self.async_proxy = any(ins.op == "wgmma" for ins in kernel.instrs)
        self.wgmma_dests = [x for ins in kernel.instrs if ins.op == "wgmma" and ins.args and isinstance(ins.args[0], P.Vec)
                            for x in ins.args[0].items if isinstance(x, P.Reg)]
        self.warp_branches = sync_branches(kernel, ipdom, is_warp_sync)
        self.steps = 0
        sp = env.specials(thread)
        self.special = sp
        self.ufs: dict = env.ufs

    # ---- symbols --------------------------------------------------------------------------------
    def fresh(self, base, w, approx=True):
        self.counter += 1
        name = f"{base}#{self.counter}@{self.t}"
        if approx:
            self.trace.approx.add(name)
        s = z3.Bool(name) if w == 0 else z3.BitVec(name, w)
        self.created.append(s)
        return s

    def uf(self, name, args, w):
        key = (name, tuple(a.size() for a in args), w)
        f = self.ufs.get(key)
        if f is None:
            f = z3.Function(f"uf_{name}_{len(self.ufs)}", *[z3.BitVecSort(a.size()) for a in args],
                            z3.BoolSort() if w == 0 else z3.BitVecSort(w))
            self.ufs[key] = f
        return f(*args)

    # ---- entry ----------------------------------------------------------------------------------
    def run_kernel(self) -> Trace:
        st = State({}, {}, z3.BoolVal(True), bv(0, 64), (), bv(0, 64), bv(0, 64))
        if self.k.blocks:
            self.run(st, 0, -1, None)
        return self.trace

    def run(self, st, b, stop, loop: Loop | None, enter=False):
        """Execute from block b until `stop` (returns the merged state there) or until every path
        ends (returns None). Inside a loop summary, back edges and exits end paths (collected)."""
        while True:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise Unsupported("control flow too large to explore")
            if b == stop:
                return st
            if not enter:
                if loop is not None and b == loop.header:
                    loop.back.append(st)
                    return None
                if loop is not None and b not in loop.body:
                    loop.exits.append((b, st))
                    return None
                if b in self.loops:
                    outs = self.summarize(st, self.loops[b], loop)
                    return self.merge([self.run(s, t, stop, loop) for t, s in _group(outs, self)])
            enter = False
            blk = self.k.blocks[b]
            for i in range(blk.start, blk.end - 1):
                st = self.step(st, self.k.instrs[i])
            last = self.k.instrs[blk.end - 1]
            nxt = blk.end if blk.end < len(self.k.instrs) else None
            nb = self.k.block_of[nxt] if nxt is not None else None
            if last.op == "bra":
                tgt = self.k.block_of[self.k.target(last.args[0].name)]
                if last.pred is None:
                    b = tgt
                    continue
                c = self.pred(st, last)
                self.check_branch(b, last, st, c)
                ip = self.k.ipdom[b]
                s1 = st.copy(z3.And(st.pc, c))
                s2 = st.copy(z3.And(st.pc, z3.Not(c)))
                sub = ip if ip != -1 else stop
                r1 = self.run(s1, tgt, sub, loop)
                r2 = self.run(s2, nb, sub, loop) if nb is not None else None
                merged = self.merge2(r1, r2, c, s1.pc, s2.pc, st.pc)
                if ip == -1 or merged is None:
                    return merged
                st, b = merged, ip
                continue
            if last.op in ("ret", "exit"):
                if last.pred is None:
                    return None
                c = self.pred(st, last)
                self.check_branch(b, last, st, c)
                st = st.copy(z3.And(st.pc, z3.Not(c)))
                if nb is None:
                    return None
                b = nb
                continue
            st = self.step(st, last)
            if nb is None:
                return None
            b = nb

    def check_branch(self, b, ins, st, c):
        """Record a branch (or predicated ret/exit) with a synchronisation before it reconverges."""
        blk, warp = b in self.bar_branches, b in self.warp_branches
        if blk or warp:
            self.trace.branches.append(BranchCheck(ins, st.pc, c, st.epoch, st.loop_ks, st.wepoch, blk, warp))

    # ---- merging --------------------------------------------------------------------------------
    def merge2(self, r1, r2, c, pc1, pc2, pc0):
        if r1 is None:
            return r2
        if r2 is None:
            return r1
        pc = pc0 if (r1.pc is pc1 and r2.pc is pc2) else z3.Or(r1.pc, r2.pc)
        return self._combine([(c, r1), (z3.Not(c), r2)], pc)

    def merge(self, states):
        states = [s for s in states if s is not None]
        if not states:
            return None
        if len(states) == 1:
            return states[0]
        return self._combine([(s.pc, s) for s in states], z3.Or(*[s.pc for s in states]))

    def _combine(self, sel_states, pc):
        regs, tags = {}, {}
        names = set()
        for _, s in sel_states:
            names |= set(s.regs)
        for r in sorted(names):     # in a fixed order: fresh symbols and z3 term ids (so the solver's work) follow it
            vals = [(c, s.regs.get(r)) for c, s in sel_states]
            ts = {s.tags.get(r) for _, s in sel_states if r in s.regs}
            known = [v for _, v in vals if v is not None]
            first = known[0]
            if all(v is not None and (v is first or v.eq(first)) for _, v in vals):
                regs[r] = first
            else:
                out = None
                for c, v in reversed(vals):
                    if v is None:
                        v = self.undef(r)
                    out = v if out is None else z3.If(c, v, out)
                regs[r] = out
            # a path where r is undefined counts as untagged: the alternatives must cover every path
            tags[r] = ts.pop() if len(ts) == 1 else self.alt_tag([(c, s.tags.get(r)) for c, s in sel_states])
        ep = wp = aq = None
        for c, s in reversed(sel_states):
            ep = s.epoch if ep is None else (ep if ep.eq(s.epoch) else z3.If(c, s.epoch, ep))
            wp = s.wepoch if wp is None else (wp if wp.eq(s.wepoch) else z3.If(c, s.wepoch, wp))
            aq = s.aseq if aq is None else (aq if aq.eq(s.aseq) else z3.If(c, s.aseq, aq))
        ks = sel_states[0][1].loop_ks
        return State(regs, tags, pc, ep, ks, wp, aq, merge_pending([(s.pc, s.pending) for _, s in sel_states]),
                     merge_pending([(s.pc, s.wpending) for _, s in sel_states]),
                     merge_pending([(s.pc, s.unfenced) for _, s in sel_states]))

    def alt_tag(self, choices):
        """A tag for a value that points into buffer t_i when c_i holds (c_i disjoint)."""
        flat = []
        for c, t in choices:
            if t is None or t == "?":
                return "?"
            for c2, t2 in self.resolve(t):
                flat.append((c if c2 is None else z3.And(c, c2), t2))
        if len({t for _, t in flat}) == 1:
            return flat[0][1]
        self.alts.append(flat)
        return ("alt", len(self.alts) - 1)

    def resolve(self, tag):
        """[(condition or None, buffer tag)] for a tag."""
        if isinstance(tag, tuple):
            return self.alts[tag[1]]
        return [(None, tag)]

    def undef(self, r):
        return self.fresh(f"undef_{r}", 0 if self.k.regs[r] == "pred" else P.TYPES[self.k.regs[r]])

    # ---- loops ----------------------------------------------------------------------------------
    def summarize(self, st0, L: Loop, outer):
        return summarize(self, st0, L, outer)

    # ---- values ---------------------------------------------------------------------------------
    def read(self, st, r: str):
        v = st.regs.get(r)
        if v is None:
            v = self.undef(r)
            st.regs[r] = v
        return v

    def pred(self, st, ins):
        p = self.read(st, ins.pred.name)
        if not z3.is_bool(p):
            p = p != 0
        return z3.Not(p) if ins.neg else p

    def operand(self, st, a, w, signed=False):
        """(value of width w, tag)."""
        if isinstance(a, P.Reg):
            v = self.read(st, a.name)
            if z3.is_bool(v):
                return (v if w == 0 else fit(v, w)), None
            return (fit(v, w, signed) if w else v != 0), st.tags.get(a.name)
        if isinstance(a, P.Imm):
            if w == 0:
                return z3.BoolVal(bool(a.value)), None
            if a.raw is not None and a.raw[1] == w:        # the literal's own bits (a signalling NaN stays one)
                return bv(a.raw[0], w), None
            if a.is_float:
                bits = struct.unpack("<Q", struct.pack("<d", a.value))[0] if w == 64 else \
                    struct.unpack("<I", struct.pack("<f", a.value))[0]
                return bv(bits, w), None
            return bv(int(a.value), w), None
        if isinstance(a, P.Special):
            return fit(self.special_value(a), w), None
        if isinstance(a, P.Sym):
            buf = self.env.buffer_for_symbol(a.name, self.k)
            if buf is None:
                raise Unsupported(f"operand {a.name} is not a known variable")
            return fit(buf.base, w), buf.name
        raise Unsupported(f"operand {a!r} not supported")

    def special_value(self, s: P.Special):
        """The register's value at its full width; a volatile one (a clock) is a new value at every read."""
        bits = P.SPECIAL_BITS.get(s.name, 32)
        if s.name in P.VOLATILE_SPECIAL:
            return self.fresh(f"sreg{s.name[1:]}", bits)
        key = s.name + ("." + s.dim if s.dim else "")
        v = self.special.get(key)
        if v is None:
            v = self.special[key] = self.fresh(f"sreg{s.name[1:]}", bits)
        return v

    def write(self, st, dst, val, tag=None, guard=None):
        if isinstance(dst, P.Sink):
            return
        if isinstance(dst, P.Vec):
            n = len(dst.items)
            w = val.size() // n
            for i, it in enumerate(dst.items):
                self.write(st, it, z3.Extract(w * (i + 1) - 1, w * i, val), None, guard)
            return
        if not isinstance(dst, P.Reg):
            raise Unsupported(f"destination {dst!r}")
        rt = self.k.regs[dst.name]
        if rt == "pred":
            val = val if z3.is_bool(val) else val != 0
        else:
            val = fit(val, P.TYPES[rt])
        if guard is not None:
            old = self.read(st, dst.name)
            val = z3.If(guard, val, old)
            if st.tags.get(dst.name) != tag:
                tag = "?" if (tag or st.tags.get(dst.name)) else None
        st.regs[dst.name] = val
        st.tags[dst.name] = tag

    # ---- one instruction ------------------------------------------------------------------------
    def step(self, st, ins: P.Instr) -> State:
        st = st.copy()
        guard = self.pred(st, ins) if ins.pred is not None else None
        execute(self, st, ins, guard)
        return st

    def record(self, st, ins, kind, buf, addr, width, guard, pending=False, async_read=False, space=None,
               noncoherent=False):
        """Record an access; pending: a cp.async shared write, which lands by the wait that completes it
        (its end is fixed there, checker/prover/semantics.py; left free, it may land any time later); async_read: a
        wgmma shared read, pending until the wgmma.wait_group that retires it (bounded there, else free).
        A write's async-proxy visibility (vis) is bounded by the thread's next fence.proxy.async."""
        if space is None and ins.space in (None, "generic"):
            return self._generic(st, ins, kind, buf, addr, width, guard, pending, async_read, noncoherent)
        pc = st.pc if guard is None else z3.And(st.pc, guard)
        for c, b in self.resolve(buf):
            a = Access(ins, kind, b, addr, width, pc if c is None else z3.And(pc, c), st.epoch, st.wepoch, st.aseq,
                       st.loop_ks, async_read=async_read, space=space, noncoherent=noncoherent)
            twin = _twin(self.k, st, a) if pending else None
            if twin is not None:      # one commit group's copies land together: their ends are one pair of symbols
                a.end, a.aseq_end = twin.end, twin.aseq_end
            elif pending or async_read:
                a.end, a.aseq_end = self.fresh(f"cp_end{ins.index}", 64), self.fresh(f"cp_aseq{ins.index}", 64)
            if pending or async_read:
                if pending:
                    st.pending = st.pending + ((a, 0, a.pc),)
                else:
                    st.wpending = st.wpending + ((a, 0, a.pc),)
            if kind != "read" and self.async_proxy and ins.space != "global":   # only async-proxy reads need it
                a.vis = twin.vis if twin is not None and twin.vis is not None else self.fresh(f"vis{ins.index}", 64)
                st.unfenced = st.unfenced + ((a, 0, a.pc),)
            self.trace.accesses.append(a)

    def _generic(self, st, ins, kind, buf, addr, width, guard, pending, async_read, noncoherent):
        """A generic access: inside a window (env.windows), an access of that space at the address less the
        window's base; elsewhere a global one."""
        inside = []
        for sp, win in self.env.windows.items():
            here = z3.And(z3.UGE(addr, win), z3.ULT(addr - win, 1 << 32))
            inside.append(here)
            self.record(st, ins, kind, buf, addr - win, width, here if guard is None else z3.And(guard, here),
                        pending, async_read, sp, noncoherent)
        rest = z3.Not(z3.Or(*inside)) if inside else None
        self.record(st, ins, kind, buf, addr, width, rest if guard is None else guard if rest is None else
                    z3.And(guard, rest), pending, async_read, "global", noncoherent)

    def retire(self, a, cond, pc, epoch, aseq):
        """The pending wgmma read a is over by this point (epoch, aseq) wherever pc holds and it is still
        pending (cond): upper bounds, so that no two of them can contradict each other."""
        self.trace.defs.append(z3.Implies(z3.And(cond, pc), z3.And(z3.ULE(a.end, epoch), z3.ULE(a.aseq_end, aseq))))

    def fenced(self, a, cond, pc, epoch):
        """The generic write a is visible to the async proxy from this epoch on (a fence.proxy.async of its
        thread after it landed) wherever pc and cond hold: an upper bound, as in retire."""
        self.trace.defs.append(z3.Implies(z3.And(cond, pc), z3.ULE(a.vis, epoch)))

    def complete(self, a, cond, pc, epoch, aseq):
        """The pending copy a lands by this point (epoch, aseq) wherever pc holds and it is still pending
        (cond: on the paths that reach here without completing it first)."""
        self.trace.defs.append(z3.Implies(z3.And(cond, pc), z3.And(a.end == epoch, a.aseq_end == aseq)))


def _twin(k, st, a):
    """The copy issued last on this state's path when it and copy a (not yet recorded) share every fate: still
    pending with no commit group closed since its issue, its pending and unfenced entries untouched since (no
    wait, merge or fence changed them), under the very same path condition (guard included), barrier epoch
    and loop iterations. From here on every commit, wait, merge and fence treats the two alike (one commit
    group on the same paths), so a's landing and async-proxy visibility may be that copy's symbols: the same
    constraints, fewer distinct terms for the solver. None otherwise."""
    if not st.pending:
        return None
    b, n, c = st.pending[-1]
    if n != 0 or c is not b.pc or b.pc is not a.pc or b.loop_ks != a.loop_ks or not b.epoch.eq(a.epoch):
        return None
    if b.vis is not None and not any(u is b and n2 == 0 and c2 is b.pc for u, n2, c2 in st.unfenced):
        return None
    return b


def _group(outs, ex):
    by = {}
    for t, s in outs:
        by.setdefault(t, []).append(s)
    return [(t, ex.merge(ss)) for t, ss in by.items()]
