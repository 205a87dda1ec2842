"""Natural loops of a PTX kernel and their summaries for the symbolic executor.

A loop is summarised once per entry: a fresh iteration count k >= 0 per thread; each induction
variable (a register whose only update in the loop is `add/sub r, r, step` with a loop-invariant
step, executed exactly once per iteration) becomes init + k*step, with the invariant that it never
wrapped (checked as an obligation at every back edge); every other register the loop writes is
havocked. Iteration k > 0 is reachable only if the body's back-edge condition held at iteration k-1
(a definition over renamed copies of the iteration's symbols). Barrier epochs advance by the
constant number of barriers per iteration (havocked if that number is not constant). What is in
flight where an iteration starts (a cp.async copy, a wgmma read, a write not yet fenced for the async
proxy) is bounded by the waits and fences that every iteration executes first (prefix_plan, carry):
for a back edge, in the next iteration, at its epoch counted from the back edge's. A loop the compiler unrolled U
times beside a remainder loop keeps U iterations of the source loop ahead of its bound (unrolled_lemmas)."""
from __future__ import annotations

from dataclasses import dataclass

import z3

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.cfg import Loop, is_block_barrier, is_warp_sync
from kreg.checker.prover.solving import always
from kreg.checker.prover.state import Unsupported, merge_pending

INT_TYPES = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64"}
NO_DEST = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "membar", "fence", "prefetch", "prefetchu",
           "nanosleep", "cp", "griddepcontrol"}


def dests(ins: P.Instr) -> list[str]:
    if ins.op in NO_DEST or not ins.args:
        return []
    d = ins.args[0]
    if isinstance(d, P.Reg):
        return [d.name]
    if isinstance(d, P.PredPair):
        return [d.a.name, d.b.name]
    if isinstance(d, P.Vec):
        return [x.name for x in d.items if isinstance(x, P.Reg)]
    return []


def _instrs(k, L):
    for b in sorted(L.body):
        blk = k.blocks[b]
        for i in range(blk.start, blk.end):
            yield b, k.instrs[i]


def inductions(k: P.Kernel, L: Loop, loops: dict[int, Loop]) -> dict:
    """Induction variables: r -> (its update, [(sign, step operand), ...]) where one iteration adds
    the sum of the steps to r. Either `add/sub r, r, step`, or a chain the compiler leaves when it
    unrolls or rotates a loop: `r2 = r + s1; r3 = r2 + s2; ...; r = rn + sn` (a link may be a copy
    `mov r, rn`, step 0), each link executed exactly once per iteration, in that order, with
    loop-invariant steps (k * ntid for a block-stride loop)."""
    writers: dict[str, list] = {}
    acc = [x.name for i in k.instrs if i.op == "wgmma" and i.args and isinstance(i.args[0], P.Vec)
           for x in i.args[0].items if isinstance(x, P.Reg)]
    for b, ins in _instrs(k, L):
        implicit = acc if ins.op == "wgmma" and ins.mods[:1] == ("wait_group",) else []   # accumulators retired there
        for r in dests(ins) + implicit:
            writers.setdefault(r, []).append((b, ins))
    out = {}
    inner = {b for h, L2 in loops.items() if h != L.header and L2.body < L.body for b in L2.body}
    for r in writers:
        chain = _chain(k, L, r, writers, inner)
        if chain is not None:
            out[r] = chain
    return out, set(writers)


def _once(k, L, b, ins, inner) -> bool:
    """ins (in block b) runs exactly once on every path from the header to a back edge."""
    return ins.pred is None and b not in inner and all(b in k._dom[lt] for lt in L.latches)


def _before(k, x, y) -> bool:
    """Instruction x runs before y in every iteration (both run once per iteration)."""
    bx, by = k.block_of[x.index], k.block_of[y.index]
    return x.index < y.index if bx == by else bx in k._dom[by]


def _link(k, L, ins, me, writers, inner):
    """(source register, sign, step) for `add/sub me, src, step` (or `add me, step, src`) with a
    loop-invariant step, or for a copy `mov me, src` (step 0: the compiler's rotated loops keep the
    counter's next value in another register and copy it back), or for the round trip `cvt.s64.s32 w, src;
    ...; cvt.u32.u64 me, w` (a 32-bit counter widened for an address and narrowed back: a copy, exactly,
    when the widening is w's only write in the loop, runs once per iteration and before the narrowing), else
    None."""
    if ins.op == "cvt" and (got := _round_trip(k, L, ins, me, writers, inner)) is not None:
        return got
    if ins.type not in ("s32", "u32", "s64", "u64", "b32", "b64"):
        return None
    if ins.op == "mov" and len(ins.args) == 2 and ins.args[0] == P.Reg(me) and isinstance(ins.args[1], P.Reg) \
            and ins.pred is None and ins.mods == (ins.type,):
        return ins.args[1].name, 1, P.Imm(0)
    if ins.op not in ("add", "sub") or len(ins.args) != 3 or ins.args[0] != P.Reg(me):
        return None
    a1, a2 = ins.args[1], ins.args[2]
    if isinstance(a1, P.Reg) and (st := _step(k, L, a2, writers, inner, ins)) is not None:
        return a1.name, -1 if ins.op == "sub" else 1, st
    if ins.op == "add" and isinstance(a2, P.Reg) and (st := _step(k, L, a1, writers, inner, ins)) is not None:
        return a2.name, 1, st
    return None


NARROW = {("u32", "u64"), ("s32", "s64"), ("u32", "s64"), ("s32", "u64"), ("b32", "b64")}
WIDEN = {("s64", "s32"), ("u64", "u32")}


def _round_trip(k, L, ins, me, writers, inner):
    """(src, 1, 0) for `cvt.{u32,s32}.{u64,s64} me, w` where w's only writer in the loop is `cvt.{s64.s32,
    u64.u32} w, src` with 32-bit src, unpredicated, run once per iteration before ins: the low 32 bits of a
    sign or zero extension are the value extended. src is not written between the two (the value the
    widening read is the one the chain sees at the narrowing)."""
    if ins.types[:2] not in NARROW or len(ins.args) != 2 or ins.args[0] != P.Reg(me) or ins.pred is not None \
            or any(m not in P.TYPES for m in ins.mods) or not isinstance(ins.args[1], P.Reg):
        return None
    w = ins.args[1].name
    if len(writers.get(w, ())) != 1:
        return None
    bw, wid = writers[w][0]
    if wid.op != "cvt" or wid.types[:2] not in WIDEN or len(wid.args) != 2 or wid.pred is not None \
            or any(m not in P.TYPES for m in wid.mods) or not isinstance(wid.args[1], P.Reg) \
            or P.TYPES.get(k.regs.get(wid.args[1].name)) != 32 or P.TYPES.get(k.regs.get(me)) != 32 \
            or not _once(k, L, bw, wid, inner) or not _before_strict(k, wid, ins):
        return None
    src = wid.args[1].name
    if any(not _before_strict(k, x, wid) and not _before_strict(k, ins, x) for _, x in writers.get(src, ())):
        return None     # src may change between the widening and the narrowing
    return src, 1, P.Imm(0)


@dataclass(frozen=True)
class Remat:
    """A step the compiler recomputes in every iteration from loop-invariant values (rematerialised,
    e.g. `mul.wide.s32 %rd95, %r13, 128` inside the loop): `reg` after running `instrs` (pure integer
    arithmetic, in order) on the loop's entry state has the value it has in every iteration."""
    reg: str
    instrs: tuple


PURE = {"add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "neg", "cvt", "mov"}
INVARIANT_SPECIALS = ("%tid", "%ntid", "%ctaid", "%nctaid")


def _step(k, L, a, writers, inner, use, depth=0):
    """a as a loop-invariant step operand of `use`: the operand itself (not written in the loop), or a
    Remat when its only writer in the loop is pure integer arithmetic on invariant operands that runs
    once in every iteration before `use` (so `use` never sees a value from an earlier iteration or from
    before the loop); None otherwise."""
    if _invariant(a, writers):
        return a
    if not isinstance(a, P.Reg) or depth > 8 or len(writers.get(a.name, ())) != 1:
        return None
    b, ins = writers[a.name][0]
    if ins.op not in PURE or not ins.types or any(t not in INT_TYPES for t in ins.types) or \
            dests(ins) != [a.name] or not _once(k, L, b, ins, inner) or not _before_strict(k, ins, use):
        return None
    pre = []
    for x in ins.args[1:]:
        if isinstance(x, P.Special) and x.name in INVARIANT_SPECIALS:
            continue
        got = _step(k, L, x, writers, inner, ins, depth + 1)
        if got is None:
            return None
        if isinstance(got, Remat):
            pre += [i for i in got.instrs if i not in pre]
    return Remat(a.name, tuple(pre) + (ins,))


def _before_strict(k, x, y) -> bool:
    """x runs before y in every iteration (x is not y)."""
    return x is not y and _before(k, x, y)


def _chain(k, L, r, writers, inner, max_links=32):
    if k.regs[r] == "pred" or len(writers[r]) != 1:
        return None
    b, upd = writers[r][0]
    if not _once(k, L, b, upd, inner):
        return None
    steps, cur = [], upd
    w = P.TYPES[k.regs[r]]
    for _ in range(max_links):
        me = dests(cur)[0]
        got = _link(k, L, cur, me, writers, inner)
        if got is None or P.TYPES[k.regs[me]] != w:
            return None
        src, sign, step = got
        steps.append((sign, step))
        if src == r:
            # the first link reads r before its update (cur runs before upd or is upd)
            return (upd, steps) if cur is upd or _before(k, cur, upd) else None
        if src not in writers or len(writers[src]) != 1:
            return None          # a link from outside the loop: no induction
        bs, nxt = writers[src][0]
        if not _once(k, L, bs, nxt, inner) or not _before(k, nxt, cur):
            return None
        cur = nxt
    return None


def _invariant(a, writers) -> bool:
    if isinstance(a, P.Imm):
        return not a.is_float
    if isinstance(a, P.Reg):
        return a.name not in writers
    return isinstance(a, P.Special) and a.name in ("%ntid", "%nctaid")


def barriers_per_iteration(k: P.Kernel, L: Loop, is_sync=None) -> int | None:
    """The number of barriers (or other syncs: is_sync) on every path header -> back edge, or None
    if it varies."""
    cs = counts_per_iteration(k, L, is_sync)
    return cs.pop() if len(cs) == 1 else None


def counts_per_iteration(k: P.Kernel, L: Loop, is_sync=None) -> set:
    """The numbers of barriers (or other syncs: is_sync) on the paths header -> back edge."""
    is_sync = is_sync or is_block_barrier

    def bars(b):
        blk = k.blocks[b]
        return sum(1 for i in range(blk.start, blk.end) if is_sync(k.instrs[i]))
    memo: dict[int, set] = {}

    def counts(b, depth=0):
        if b in memo:
            return memo[b]
        if depth > 500:
            raise Unsupported("loop body too deep")
        c = bars(b)
        res = set()
        for s in k.blocks[b].succs:
            if s == L.header:
                res.add(c)
            elif s in L.body and s not in k._dom[b]:
                res |= {c + x for x in counts(s, depth + 1)}
        memo[b] = res
        return res
    return counts(L.header)


def summarize(ex, st0, L: Loop, outer):
    k = ex.k
    ind, written = inductions(k, L, ex.loops)
    has_bar = any(is_block_barrier(ins) for _, ins in _instrs(k, L))
    B = barriers_per_iteration(k, L) if has_bar else 0
    has_wsync = any(is_warp_sync(ins) for _, ins in _instrs(k, L))
    BW = barriers_per_iteration(k, L, is_warp_sync) if has_wsync else 0
    has_async = any(_is_async_event(ins) for _, ins in _instrs(k, L))
    BA = barriers_per_iteration(k, L, _is_async_event) if has_async else 0
    # Where paths differ in their async events (a conditional copy, a skipped wgmma), the async count is only
    # compared for order within a thread (cp.async and wgmma completion): every iteration is counted as the
    # most events of any path (a back edge pads its count up to that), which keeps the order of every event
    # and access. Not with inner loops in the body (their events repeat): then a fresh count (no order).
    pad = BA is None and not any(h in L.body for h in ex.loops if h != L.header) and \
        bool(counts_per_iteration(k, L, _is_async_event))
    if pad:
        BA = max(counts_per_iteration(k, L, _is_async_event))
    plan = prefix_plan(k, L, ex.loops)
    line = k.instrs[k.blocks[L.header].start].line
    tags = {r: st0.tags.get(r) for r in written}
    tr = ex.trace
    # what is in flight on entry, bounded by iteration 0's prefix (always executed once the loop is entered)
    inherited, winherited, uinherited = carry(ex, st0, plan)
    lemmas = unrolled_lemmas(ex, st0, L, ind)
    for attempt in range(4):
        marks = (len(tr.accesses), len(tr.branches), len(tr.obligations), len(tr.defs), len(tr.collectives))
        first_sym = len(ex.created)
        widths = {r: P.TYPES[k.regs[r]] for r in ind}
        kw = 64 if any(w == 64 for w in widths.values()) else 32
        kk = ex.fresh(f"k{L.header}", kw)   # approx: reachability keeps one step of history
        ok = ex.fresh(f"reach{L.header}", 0, approx=False)
        hs = st0.copy()
        hs.loop_ks = st0.loop_ks + (kk,)
        inv, nexts, kbounds = [], [], []
        for r, (ins, steps) in ind.items():
            w = widths[r]
            init = ex.read(st0, r)
            step = z3.BitVecVal(0, w)
            for sign, stepop in steps:
                at = st0
                if isinstance(stepop, Remat):          # recomputed in the loop from invariant values
                    for i in stepop.instrs:
                        at = ex.step(at, i)
                    stepop = P.Reg(stepop.reg)
                sx, stag = ex.operand(at, stepop, w, signed=True)
                if stag is not None:
                    raise Unsupported(f"pointer-valued loop step at line {ins.line}")
                step = step + sx if sign > 0 else step - sx
            sv = z3.simplify(step)
            if z3.is_bv_value(sv) and sv.as_signed_long() != 0:
                kbounds.append(((1 << w) - 1) // abs(sv.as_signed_long()))
            ww = max(kw, w) + 2
            K, S = z3.ZeroExt(ww - kw, kk), z3.SignExt(ww - w, step)
            total = z3.SignExt(ww - w, init) + K * S
            inv += [z3.BVMulNoOverflow(K, S, True), _in_range(total, w)]
            inv += [lem.ahead(total) for lem in lemmas if lem.reg == r]
            nexts.append((r, total + S, w, ins))
            hs.regs[r] = z3.Extract(w - 1, 0, total)
            hs.tags[r] = st0.tags.get(r)
        for r in sorted(written - set(ind)):
            t = k.regs[r]
            hs.regs[r] = ex.fresh(f"h{L.header}_{r.lstrip('%')}", 0 if t == "pred" else P.TYPES[t])
            hs.tags[r] = tags[r]
        if B is None:
            hs.epoch = ex.fresh(f"epoch{L.header}", 64)
            ex.trace.defs.append(z3.ULT(hs.epoch, z3.BitVecVal(1 << 62, 64)))   # a count: no wrap-around
        elif B:
            hs.epoch = st0.epoch + z3.ZeroExt(64 - kw, kk) * B
        if BW is None:
            hs.wepoch = ex.fresh(f"wepoch{L.header}", 64)
        elif BW:
            hs.wepoch = st0.wepoch + z3.ZeroExt(64 - kw, kk) * BW
        if BA is None:
            hs.aseq = ex.fresh(f"aseq{L.header}", 64)
            ex.trace.defs.append(z3.ULT(hs.aseq, z3.BitVecVal(1 << 62, 64)))
        elif BA:
            hs.aseq = st0.aseq + z3.ZeroExt(64 - kw, kk) * BA
        hs.pending = ()       # in flight on entry or from an earlier iteration: bounded by carry, or never
        hs.wpending = hs.unfenced = ()
        hs.pc = z3.And(st0.pc, ok, *inv)
        L2 = Loop(L.header, L.body, L.latches)
        ex.run(hs, L.header, -1, L2, enter=True)
        changed = False
        for bs in L2.back:
            for r in written - set(ind):
                t = bs.tags.get(r)
                if r in bs.regs and t != tags[r] and tags[r] != "?":     # "?" (any buffer) is the top
                    tags[r] = t if (tags[r] is None and r not in st0.regs) else "?"
                    changed = True
        if not changed:
            break
        del tr.accesses[marks[0]:], tr.branches[marks[1]:], tr.obligations[marks[2]:], tr.defs[marks[3]:], \
            tr.collectives[marks[4]:]
    else:
        raise Unsupported(f"pointer provenance in loop at line {line} does not settle")
    if kbounds:
        # Every path through the loop carries inv: init and init + k*step both in w-bit range, so
        # |k*step| < 2^w. Bounding k at top level loses no model in which any of its uses is reached,
        # and lets the integer translation see that k*step cannot wrap.
        tr.defs.append(z3.ULE(kk, min(kbounds)))
    kmax = z3.BitVecVal((1 << kw) - 1, kw)
    for bs in L2.back:
        tr.obligations.append((z3.And(bs.pc, kk == kmax), f"iteration count of loop at line {line} may overflow"))
        for r, nxt, w, ins in nexts:
            tr.obligations.append((z3.And(bs.pc, z3.Not(_in_range(nxt, w))),
                                   f"induction variable {r} of loop at line {line} may wrap around "
                                   f"({ins.text.strip()})"))
    for bs in L2.back:          # in flight at a back edge: bounded by the next iteration's prefix, else for ever
        if pad:
            bs.aseq = st0.aseq + (z3.ZeroExt(64 - kw, kk) + 1) * BA
        carry(ex, bs, plan)
    new_syms = ex.created[first_sym:]
    cont = z3.Or(*[bs.pc for bs in L2.back]) if L2.back else z3.BoolVal(False)
    sub = [(kk, kk - 1)]
    for s in new_syms:
        if not s.eq(kk):
            sub.append((s, ex.fresh("prev_" + s.decl().name().split("#")[0], 0 if z3.is_bool(s) else s.size())))
    prev = z3.substitute(cont, *sub)
    history = [_counted_exit(ex, st0, L, ind, widths, kk, kw)]
    tr.defs.append(ok == z3.Or(kk == 0, z3.And(kk != 0, prev, *history)))
    if inherited:             # pending on entry and not completed at the header: still pending after it
        for _, st in L2.exits:
            st.pending = merge_pending([(z3.BoolVal(True), inherited), (z3.BoolVal(True), st.pending)])
    # wgmma reads pending and writes unfenced on entry that iteration 0's prefix does not end: still so after
    # the loop (their bounds come later, or never, which is the conservative side)
    if winherited or uinherited:
        for _, st in L2.exits:
            st.wpending = merge_pending([(z3.BoolVal(True), winherited), (z3.BoolVal(True), st.wpending)])
            st.unfenced = merge_pending([(z3.BoolVal(True), uinherited), (z3.BoolVal(True), st.unfenced)])
    return L2.exits


def _is_async_event(ins):
    """An instruction that advances the async counter (symbolic State.aseq): a cp.async issue or wait, a
    wgmma.mma_async or wgmma.wait_group."""
    if ins.op == "wgmma":
        return bool(ins.mods) and ins.mods[0] in ("mma_async", "wait_group")
    return ins.op == "cp" and "async" in ins.mods and "commit_group" not in ins.mods


@dataclass(frozen=True)
class PlanStep:
    """A wait or proxy fence that every iteration executes, in order, before anything that may leave it, with
    the barriers before it, the async events up to and including it, and the commit groups (cp.async, wgmma)
    closed before it, all counted from the iteration's start."""
    kind: str                # "cp_wait" | "wg_wait" | "fence"
    left: int | None         # groups a wait leaves pending (None: cp.async.wait_all)
    bars: int
    events: int
    cp_commits: int
    wg_commits: int


def _counted(ins) -> bool:
    return is_block_barrier(ins) or _is_async_event(ins) or ins.op in ("cp", "wgmma") or is_warp_sync(ins)


def _skip_region(k, L, b, loops):
    """The immediate post-dominator of the conditional branch ending block b when every path from b to it
    stays inside the loop's body, past no loop header, thread exit, barrier, async event or commit (so both
    sides leave every count of prefix_plan alike); else None."""
    ip = k.ipdom[b]
    if ip == -1 or ip == L.header or ip not in L.body or ip in loops:
        return None
    seen, todo = set(), list(k.blocks[b].succs)
    while todo:
        x = todo.pop()
        if x == ip or x in seen:
            continue
        if x == L.header or x not in L.body or x in loops or len(seen) > 64:
            return None
        seen.add(x)
        blk = k.blocks[x]
        if any(_counted(k.instrs[i]) or k.instrs[i].op in ("ret", "exit") for i in range(blk.start, blk.end)):
            return None
        todo += blk.succs
    return ip


def prefix_plan(k: P.Kernel, L: Loop, loops) -> tuple:
    """The cp.async waits, wgmma waits and fence.proxy.async that every iteration of L executes from its
    header on (PlanStep), up to the first thing that may end the iteration or make the counts differ between
    paths: a branch out of the loop or back to its header, a thread exit, an inner loop, a predicated
    barrier, wait, commit or async event, a warp sync or a barrier with a register operand. Conditional
    branches around code without any of those are skipped (to their immediate post-dominator)."""
    out = []
    bars = events = cpc = wgc = 0
    b, seen = L.header, set()
    while b not in seen:
        seen.add(b)
        blk = k.blocks[b]
        for i in range(blk.start, blk.end):
            ins = k.instrs[i]
            if ins.op in ("ret", "exit"):
                return tuple(out)
            if not _counted(ins):
                if ins.op == "fence" and ins.pred is None and {"proxy", "async"} <= set(ins.mods) and \
                        all(m in ("proxy", "async", "shared::cta") for m in ins.mods):
                    out.append(PlanStep("fence", None, bars, events, cpc, wgc))
                continue
            if ins.pred is not None or is_warp_sync(ins):
                return tuple(out)
            if is_block_barrier(ins):
                if "red" in ins.mods or len(ins.args) != 1 or not isinstance(ins.args[0], P.Imm):
                    return tuple(out)
                bars += 1
            elif ins.op == "cp":
                if "commit_group" in ins.mods:
                    cpc += 1
                    continue
                events += 1
                if "wait_all" in ins.mods:
                    out.append(PlanStep("cp_wait", None, bars, events, cpc, wgc))
                elif "wait_group" in ins.mods:
                    if not ins.args or not isinstance(ins.args[0], P.Imm):
                        return tuple(out)
                    out.append(PlanStep("cp_wait", int(ins.args[0].value), bars, events, cpc, wgc))
            elif ins.op == "wgmma":
                kind = ins.mods[0] if ins.mods else ""
                if kind == "commit_group":
                    wgc += 1
                elif kind == "wait_group":
                    if len(ins.args) != 1 or not isinstance(ins.args[0], P.Imm):
                        return tuple(out)
                    events += 1
                    out.append(PlanStep("wg_wait", int(ins.args[0].value), bars, events, cpc, wgc))
                elif kind == "mma_async":
                    events += 1
                elif kind != "fence":
                    return tuple(out)
            else:
                return tuple(out)
        last = k.instrs[blk.end - 1]
        if last.op == "bra" and last.pred is None:
            nb = k.block_of[k.target(last.args[0].name)]
        elif last.op == "bra":
            nb = _skip_region(k, L, b, loops)
        else:
            nb = blk.succs[0] if len(blk.succs) == 1 else None
        if nb is None or nb == L.header or nb not in L.body or nb in loops:
            return tuple(out)
        b = nb
    return tuple(out)


def carry(ex, st, plan):
    """Bound what st (on entry to an iteration: the loop's entry state for iteration 0, a back edge's state
    for the next one) leaves in flight by the iteration's prefix (prefix_plan): a pending copy completes at the
    first cp.async wait that completes its group (its groups closed so far plus those closed before the wait,
    counting the fewest where paths merged), a pending wgmma read retires at the first wgmma.wait_group that
    retires its group, an unfenced write is visible to the async proxy from the first fence.proxy.async after
    it has landed; each at the epoch and async count it runs at. Return what none of them ends (pending,
    wgmma pending, unfenced): left unbounded, which is the conservative side."""
    def first(kind, n, attr, start=0):
        for i in range(start, len(plan)):
            s = plan[i]
            if s.kind == kind and (s.left is None or n + getattr(s, attr) >= s.left + 1):
                return i
        return None
    rest_p, rest_w, rest_u, landed = [], [], [], {}
    for a, n, c in st.pending:
        i = first("cp_wait", n, "cp_commits")
        if i is None:
            rest_p.append((a, n, c))
            continue
        landed[id(a)] = i
        ex.complete(a, c, st.pc, st.epoch + plan[i].bars, st.aseq + plan[i].events)
    for a, n, c in st.wpending:
        i = first("wg_wait", n, "wg_commits")
        if i is None:
            rest_w.append((a, n, c))
            continue
        ex.retire(a, c, st.pc, st.epoch + plan[i].bars, st.aseq + plan[i].events)
    pending = {id(a) for a, _, _ in st.pending}
    for a, n, c in st.unfenced:
        if id(a) in pending and id(a) not in landed:
            rest_u.append((a, n, c))
            continue
        i = first("fence", 0, "bars", landed.get(id(a), -1) + 1)
        if i is None:
            rest_u.append((a, n, c))
            continue
        ex.fenced(a, c, st.pc, st.epoch + plan[i].bars)
    return tuple(rest_p), tuple(rest_w), tuple(rest_u)


def _continue_test(k, L, lt):
    """(block, branch, taken) where iteration continues at latch lt exactly when `branch`'s predicate, as
    written, is `taken`: the latch's own `@p bra header`, or a latch that is only `bra header` whose single
    predecessor ends with `@p bra` out of the loop and falls through to it (the compiler's exit test at the
    bottom of a rotated loop); else None."""
    blk = k.blocks[lt]
    br = k.instrs[blk.end - 1]
    if br.op != "bra" or not br.args or k.block_of[k.target(br.args[0].name)] != L.header:
        return None
    if br.pred is not None:
        return blk, br, True
    if blk.end - blk.start != 1 or len(blk.preds) != 1:
        return None
    pb = k.blocks[blk.preds[0]]
    ex = k.instrs[pb.end - 1]
    if pb.id not in L.body or ex.op != "bra" or ex.pred is None or not ex.args or \
            k.block_of[k.target(ex.args[0].name)] in L.body or sorted(pb.succs) != sorted(
                {k.block_of[k.target(ex.args[0].name)], lt}):
        return None
    return pb, ex, False


def _latch_setp(k, blk, br):
    """The last instruction of blk before its branch br that writes br's predicate (None if none does)."""
    return next((k.instrs[i] for i in range(blk.end - 2, blk.start - 1, -1) if br.pred.name in dests(k.instrs[i])),
                None)


def _counted_exit(ex, st0, L, ind, widths, kk, kw):
    """For loops that continue while `counter_next != E` (constant step s, E invariant), every earlier
    iteration continued, so E is not among counter_1..counter_k (one-step history misses this). Only a test
    every latch makes (the same counter against the same E): an iteration that continues another way may
    pass E."""
    k = ex.k
    per_latch = []
    for lt in L.latches:
        got = {}
        test = _continue_test(k, L, lt)
        if test is None:
            return z3.BoolVal(True)
        blk, br, taken = test
        setp = _latch_setp(k, blk, br)
        if setp is None or setp.op != "setp" or len(setp.args) != 3 or not isinstance(setp.args[0], P.Reg):
            return z3.BoolVal(True)
        cmp = setp.mods[0]
        cont_true = taken != br.neg          # the iteration continues when the setp's comparison holds
        if not ((cmp == "ne" and cont_true) or (cmp == "eq" and not cont_true)):
            return z3.BoolVal(True)
        for a, e in ((setp.args[1], setp.args[2]), (setp.args[2], setp.args[1])):
            if not isinstance(a, P.Reg) or a.name not in ind:
                continue
            upd, steps = ind[a.name]
            if len(steps) != 1:
                continue
            sign, stepop = steps[0]
            if not isinstance(stepop, P.Imm) or stepop.value == 0 or abs(stepop.value) >= 1 << 20 or \
                    (k.block_of[upd.index] == blk.id and upd.index > setp.index):
                continue
            if isinstance(e, P.Reg) and any(e.name in dests(ins) for _, ins in _instrs(k, L)):
                continue
            w = widths[a.name]
            if P.TYPES[setp.type] != w:
                continue
            s = sign * stepop.value
            ww = max(kw, w) + 2
            c0 = z3.SignExt(ww - w, ex.read(st0, a.name))
            ev = z3.SignExt(ww - w, ex.operand(st0, e, w)[0])
            K = z3.ZeroExt(ww - kw, kk)
            d, sv = ev - c0, z3.BitVecVal(s, ww)
            span = z3.And(sv <= d, d <= K * sv) if s > 0 else z3.And(K * sv <= d, d <= sv)
            # |s| divides d: d's magnitude (|s| <= it, by span) unsigned, the same as a signed remainder of d
            # being zero, which the integer translation keeps (a signed remainder it loses)
            # (a step of one divides everything: no remainder at all)
            mag = d if s > 0 else -d
            hit = z3.And(*([z3.URem(mag, z3.BitVecVal(abs(s), ww)) == 0] if abs(s) != 1 else []),
                         z3.BVMulNoOverflow(K, sv, True), span)
            got[(a.name, str(e))] = z3.Not(hit)
        per_latch.append(got)
    common = set.intersection(*[set(g) for g in per_latch]) if per_latch else set()
    return z3.And(*[per_latch[0][c] for c in sorted(common)]) if common else z3.BoolVal(True)


def _in_range(total, w):
    ww = total.size()
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return z3.And(total >= z3.BitVecVal(lo, ww), total <= z3.BitVecVal(hi, ww))


def remainder_factors(k: P.Kernel, loops) -> dict[str, int]:
    """Registers set to x & (U - 1) (U = 2, 4 or 8) and counted down by one inside a loop, with their U: the trip
    count of the remainder loop the compiler puts beside a loop it unrolls U times."""
    masked = {dests(i)[0]: int(i.args[2].value) + 1 for i in k.instrs if i.op == "and" and len(i.args) == 3 and
              isinstance(i.args[2], P.Imm) and i.args[2].value in (1, 3, 7) and dests(i)}
    down = {dests(i)[0] for L in loops.values() for _, i in _instrs(k, L)
            if i.op == "add" and len(i.args) == 3 and isinstance(i.args[2], P.Imm) and i.args[2].value == -1
            and dests(i) and i.args[1] == P.Reg(dests(i)[0])}
    return {r: u for r, u in masked.items() if r in down}


NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
LEMMA_UNITS = 6_000_000
BIT_BLAST = ("simplify", "propagate-values", "solve-eqs", "bit-blast", "sat")
HARD = {z3.Z3_OP_BMUL, z3.Z3_OP_BSDIV, z3.Z3_OP_BUDIV, z3.Z3_OP_BSREM, z3.Z3_OP_BUREM, z3.Z3_OP_BSMOD,
        z3.Z3_OP_BSDIV_I, z3.Z3_OP_BUDIV_I, z3.Z3_OP_BSREM_I, z3.Z3_OP_BUREM_I, z3.Z3_OP_BSMOD_I}


@dataclass(frozen=True)
class Ahead:
    """Every iteration of the loop starts with its induction variable `reg` at least (U - 1) x s + 1 short of
    the bound it is tested against (direction 1: it counts up to `bound`, -1: down to it): U iterations of
    the source loop, s apart, are left whenever one of the unrolled loop's is."""
    reg: str
    bound: object          # the bound as it continues (r < bound or r > bound), sign-extended by 2 bits
    direction: int
    ahead_by: int          # (U - 1) x s

    def ahead(self, total):
        ww = max(total.size(), self.bound.size()) + 2
        d = z3.SignExt(ww - self.bound.size(), self.bound) - z3.SignExt(ww - total.size(), total)
        return (d if self.direction > 0 else -d) > z3.BitVecVal(self.ahead_by, ww)


def _bound_test(k, L, ind):
    """(register, bound operand, comparison) where every latch of L continues exactly while the induction
    register (one constant step, its update before the test) compares so with a loop-invariant bound, signed
    at the register's width: lt / le counting up, gt / ge counting down; else None."""
    found = set()
    written = {r for _, ins in _instrs(k, L) for r in dests(ins)}
    for lt in L.latches:
        test = _continue_test(k, L, lt)
        if test is None:
            return None
        blk, br, taken = test
        setp = _latch_setp(k, blk, br)
        if setp is None or setp.op != "setp" or len(setp.args) != 3 or setp.pred is not None or \
                setp.type not in ("s32", "s64") or setp.mods[0] not in NEGATED or len(dests(setp)) != 1:
            return None
        cmp = setp.mods[0] if taken != br.neg else NEGATED[setp.mods[0]]
        x, y = setp.args[1], setp.args[2]
        if not (isinstance(x, P.Reg) and x.name in ind):
            x, y, cmp = y, x, SWAPPED[cmp]
        if not (isinstance(x, P.Reg) and x.name in ind) or P.TYPES[k.regs[x.name]] != P.TYPES[setp.type]:
            return None
        upd, steps = ind[x.name]
        if len(steps) != 1 or not isinstance(steps[0][1], P.Imm) or steps[0][1].is_float or \
                (k.block_of[upd.index] == blk.id and upd.index > setp.index):
            return None
        if isinstance(y, P.Reg) and y.name in written or isinstance(y, P.Imm) and y.is_float or \
                not isinstance(y, (P.Reg, P.Imm)):
            return None
        found.add((x.name, repr(y), cmp, y))
    if len(found) != 1:
        return None
    r, _, cmp, y = found.pop()
    return r, y, cmp


def _opaque(f):
    """f with each product, quotient and remainder of two non-constant terms replaced by a fresh constant (the
    same term by the same one): a formula f is an instance of, so whatever holds for it holds for f."""
    pairs, seen, todo = {}, set(), [f]
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        kind = t.decl().kind()
        if kind == z3.Z3_OP_BMUL and sum(not _constant(c) for c in t.children()) > 1 or \
                kind in HARD and kind != z3.Z3_OP_BMUL and not _constant(t.children()[-1]):
            pairs.setdefault(t.get_id(), (t, z3.BitVec(f"kreg_opaque{len(pairs)}", t.size())))
            continue
        todo.extend(reversed(t.children()))
    return z3.substitute(f, *pairs.values()) if pairs else f


def _constant(t) -> bool:
    return z3.is_bv_value(t) or z3.is_bv_value(z3.simplify(t))


def unrolled_lemmas(ex, st0, L: Loop, ind) -> list[Ahead]:
    """For a loop that continues while an induction variable r (step S) stays below (or above) a bound E, in a
    kernel with a remainder loop of some U dividing S (remainder_factors): where the loop's entry state
    implies D0 >= 1 and ((D0 - 1) / s) mod U = U - 1 (D0 the distance E - r on entry, s = |S| / U; checked in
    a context of its own by bit-blasting, with products and quotients of unknowns made opaque, bounded by units
    only),
    every iteration starts at a distance D with the same two facts (D goes down by U x s while the loop
    continues: by D >= 1 at each continue), so D > (U - 1) x s: the unrolled body's U accesses, s apart, are
    all before the bound. One Ahead per such U."""
    k = ex.k
    factors = sorted(set(remainder_factors(k, ex.loops).values()))
    if not factors:
        return []
    test = _bound_test(k, L, ind)
    if test is None:
        return []
    r, y, cmp = test
    w = P.TYPES[k.regs[r]]
    S = ind[r][1][0][0] * int(ind[r][1][0][1].value)
    direction = 1 if cmp in ("lt", "le") else -1
    if S * direction <= 0:
        return []
    ww = w + 4
    bound = z3.SignExt(2, ex.operand(st0, y, w, signed=True)[0])
    bound = bound + 1 if cmp == "le" else bound - 1 if cmp == "ge" else bound
    d0 = z3.SignExt(2, bound) - z3.SignExt(ww - w, ex.read(st0, r))
    d0 = d0 if direction > 0 else -d0
    out = []
    for u in factors:
        s = abs(S) // u
        if abs(S) % u or s == 0:
            continue
        c0 = z3.And(d0 >= 1, z3.URem(z3.UDiv(d0 - 1, s), u) == u - 1)
        claim = _opaque(z3.Implies(z3.And(st0.pc, *ex.trace.defs), c0))
        if always([*ex.env.constraints, *ex.env.thread_constraints(ex.t)], claim, LEMMA_UNITS,
                  text=ex.env.text_of(ex.t), tactics=BIT_BLAST):
            out.append(Ahead(r, bound, direction, (u - 1) * s))
    return out
