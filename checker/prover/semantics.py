"""What each PTX instruction does to the symbolic state: exact bitvector semantics for integer
arithmetic, comparisons, conversions and address computations; uninterpreted functions (equal
inputs, equal outputs, for every thread) for floating-point and bit-twiddling instructions; fresh
values (havoc) for anything that depends on other threads or on time; memory accesses recorded."""
from __future__ import annotations

import z3

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.cfg import is_warp_sync
from kreg.checker.prover.solving import always
from kreg.checker.prover.state import SIGNED, BranchCheck, Unsupported, bv, fit

FLOAT = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3x2", "e5m2x2"}
PURE_UF = {"fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "testp", "bfe", "bfi",
           "prmt", "clz", "brev", "lop3", "shf", "sad", "cnot", "mul24", "mad24", "slct", "set"}
HAVOC = {"shfl", "vote", "activemask", "match", "redux", "addc", "subc", "madc", "isspacep"}
NOOP = {"membar", "fence", "prefetch", "prefetchu", "nanosleep", "ret", "exit", "bra",
        "griddepcontrol"}   # PDL's wait / launch_dependents order this grid against others only
# What may reach the value-only fallbacks below: computations on registers with no memory, synchronisation
# or other side effect. Any other instruction (texture and surface access, stmatrix, mbarrier, discard, ...)
# is Unsupported: a memory effect the prover does not see would make every property's proof void.
PURE = {"add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min", "max", "popc", "clz",
        "bfind", "fns", "brev", "bfe", "bfi", "szext", "bmsk", "dp4a", "dp2a", "and", "or", "xor", "not", "cnot",
        "lop3", "shf", "shl", "shr", "prmt", "cvt", "setp", "selp", "slct", "set", "fma", "rcp", "sqrt", "rsqrt",
        "sin", "cos", "lg2", "ex2", "tanh", "copysign", "testp", "trap", "createpolicy"}
INT_MODS = {"lo", "hi", "wide", "cc", "sat"}   # integer-op modifiers modelled below (sat: add, sub, mad.hi)
CMP_S = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
         "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
CMP_U = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": z3.ULT, "le": z3.ULE,
         "gt": z3.UGT, "ge": z3.UGE, "lo": z3.ULT, "ls": z3.ULE, "hi": z3.UGT, "hs": z3.UGE}


def _w(ins):
    t = ins.type
    if t is None:
        raise Unsupported(f"instruction without a type: {ins.text.strip()}")
    return P.TYPES[t]


def _width_of(ex, a, default):
    if isinstance(a, P.Reg):
        t = ex.k.regs[a.name]
        return 0 if t == "pred" else P.TYPES[t]
    if isinstance(a, P.Vec):
        return sum(_width_of(ex, x, default // max(len(a.items), 1)) for x in a.items)
    if isinstance(a, P.Special):
        return P.SPECIAL_BITS.get(a.name, 32)
    return default


def _val(ex, st, a, w, signed=False):
    if isinstance(a, P.Vec):
        n = len(a.items)
        parts = [_val(ex, st, x, w // n, signed)[0] for x in a.items]
        return z3.Concat(*reversed(parts)) if n > 1 else parts[0], None
    return ex.operand(st, a, w, signed)


def _join(*tags):
    ts = {t for t in tags if t is not None}
    if not ts:
        return None
    return ts.pop() if len(ts) == 1 else "?"


def _havoc_dests(ex, st, ins, guard):
    for d in (ins.args[0].a, ins.args[0].b) if isinstance(ins.args[0], P.PredPair) else (ins.args[0],):
        ds = d.items if isinstance(d, P.Vec) else (d,)
        for x in ds:
            if isinstance(x, P.Reg):
                w = _width_of(ex, x, 32)
                ex.write(st, x, ex.fresh(f"v{ins.index}", w), None, guard)


def _cvta(ex, st, ins, guard):
    """cvta.space d, a (to generic): d = a + the space's window (checker/prover/env.py); cvta.to.space: d = a - it.
    The tag stays: the same buffer, addressed in the other space."""
    win = ex.env.windows.get(ins.space)
    d = ins.args[0]
    if win is None or not isinstance(d, P.Reg) or len(ins.args) != 2:
        raise Unsupported(f"address conversion of this state space: {ins.text.strip()}")
    v, tag = ex.operand(st, ins.args[1], 64)
    v = z3.simplify(v - win) if "to" in ins.mods else v + win
    ex.write(st, d, fit(v, _width_of(ex, d, 64)), tag, guard)


def _uf_op(ex, st, ins, guard):
    dst, srcs = ins.args[0], ins.args[1:]
    tw = P.TYPES.get(ins.type or "b32", 32)
    args = []
    for a in srcs:
        w = _width_of(ex, a, tw)
        v = _val(ex, st, a, w)[0] if w else _val(ex, st, a, 0)[0]
        args.append(fit(v, 1) if z3.is_bool(v) else v)
    name = ".".join((ins.op,) + ins.mods)
    if isinstance(dst, P.PredPair) and ins.op == "lop3":    # d|p: d the 32-bit result, p = (d != 0) BoolOp q
        if len(args) != 5 or not z3.is_bool(q := _val(ex, st, srcs[4], 0)[0]):
            raise Unsupported(f"lop3 with a predicate destination: {ins.text.strip()}")
        d = ex.uf(name, args[:4], 32)
        ex.write(st, dst.a, d, None, guard)
        ex.write(st, dst.b, (z3.And if "and" in ins.mods else z3.Or)(d != 0, q), None, guard)
        return
    if isinstance(dst, P.PredPair):
        r = ex.uf(name, args, 0)
        ex.write(st, dst.a, r, None, guard)
        ex.write(st, dst.b, z3.Not(r), None, guard)
        return
    w = _width_of(ex, dst, tw)
    ex.write(st, dst, ex.uf(name, args, w), None, guard)


def _cluster_form(ins: P.Instr) -> bool:
    """mapa, a cluster barrier, a shared::cluster access (or anything else naming the cluster scope but
    a fence), or a %cluster_* / %clusterid operand: thread-block clusters are not modelled (a block's
    accesses to another block's shared memory and the cluster barrier that orders them), so the prover
    says unknown rather than treating them as this block's shared memory and a block barrier."""
    if ins.op == "mapa":
        return True
    if ins.op not in ("fence", "membar") and any("cluster" in m for m in ins.mods):
        return True
    args = [x for a in ins.args for x in (a.items if isinstance(a, P.Vec) else (a,))]
    return any(isinstance(a, P.Special) and a.name in P.CLUSTER_SPECIAL for a in args)


def execute(ex, st, ins: P.Instr, guard):
    op = ins.op
    if _cluster_form(ins):
        raise Unsupported(f"thread-block clusters are not modelled: {ins.text.strip()}")
    if op == "fence" and "proxy" in ins.mods:
        return _proxy_fence(ex, st, ins, guard)
    if op in NOOP:
        return
    if op in ("ld", "ldu"):
        return _load(ex, st, ins, guard)
    if op == "st":
        addr, tag = _address(ex, st, ins.args[0])
        return ex.record(st, ins, "write", tag, addr, _w(ins) // 8 * ins.vector, guard)
    if op in ("atom", "red"):
        a = ins.args[1] if op == "atom" else ins.args[0]
        if not isinstance(a, P.Addr):
            raise Unsupported(f"atomic without an address: {ins.text.strip()}")
        addr, tag = _address(ex, st, a)
        ex.record(st, ins, "atomic", tag, addr, max(_w(ins) // 8, 1) * ins.vector, guard)
        if op == "atom" and not _ticket(ex, st, ins, guard, addr, tag):
            _havoc_dests(ex, st, ins, guard)
        return
    if op in ("bar", "barrier"):
        return _barrier(ex, st, ins, guard)
    if op == "cp":
        return _cp_async(ex, st, ins, guard)
    if op == "ldmatrix":
        return _ldmatrix(ex, st, ins, guard)
    if op == "wgmma":
        return _wgmma(ex, st, ins, guard)
    if op == "setmaxnreg":
        raise Unsupported(f"warpgroup instruction not modelled by the prover: {ins.text.strip()}")
    if op == "mma":          # a warp collective: each result depends on every lane's fragments
        return _havoc_dests(ex, st, ins, guard)
    if op in ("bfe", "bfi") and _bit_field(ex, st, ins, guard):
        return
    if op == "vote" and _ballot(ex, st, ins, guard):
        return
    if op in HAVOC:
        return _havoc_dests(ex, st, ins, guard)
    if op == "popc" and ins.type in ("b32", "b64") and len(ins.args) == 2:
        return _popc(ex, st, ins, guard)
    if op in PURE_UF:
        return _uf_op(ex, st, ins, guard)
    if op == "cvta" and ins.space != "global":
        return _cvta(ex, st, ins, guard)
    if op in ("mov", "cvta"):       # cvta{.to}.global: a global address is its generic address
        d = ins.args[0]
        w = _width_of(ex, d, _w(ins))
        if isinstance(ins.args[1], P.Vec):
            v, tag = _val(ex, st, ins.args[1], w)
        else:
            v, tag = ex.operand(st, ins.args[1], w if not isinstance(d, P.Vec) else _w(ins))
        return ex.write(st, d, v, tag, guard)
    if op == "cvt":
        return _cvt(ex, st, ins, guard)
    if op == "setp":
        return _setp(ex, st, ins, guard)
    if op not in PURE:
        raise Unsupported(f"{op} is not modelled by the prover (its memory or synchronisation effects are not "
                          f"known to it): {ins.text.strip()}")
    t = ins.type
    if t in FLOAT or t is None:
        return _uf_op(ex, st, ins, guard)
    w = P.TYPES[t]
    signed = t in SIGNED
    d = ins.args[0]
    if op == "selp":
        a, ta = ex.operand(st, ins.args[1], w)
        b, tb = ex.operand(st, ins.args[2], w)
        c, _ = ex.operand(st, ins.args[3], 0)
        tag = ta if ta == tb else ex.alt_tag([(c, ta), (z3.Not(c), tb)]) if ta and tb else "?"
        return ex.write(st, d, z3.If(c, a, b), tag, guard)
    if t == "pred":
        vals = [ex.operand(st, a, 0)[0] for a in ins.args[1:]]
        if op == "and":
            r = z3.And(*vals)
        elif op == "or":
            r = z3.Or(*vals)
        elif op == "xor":
            r = z3.Xor(*vals)
        elif op == "not":
            r = z3.Not(vals[0])
        else:
            return _uf_op(ex, st, ins, guard)
        return ex.write(st, d, r, None, guard)
    if op in ("mul", "mad") and "wide" in ins.mods:
        a = fit(ex.operand(st, ins.args[1], w)[0], 2 * w, signed)
        b = fit(ex.operand(st, ins.args[2], w)[0], 2 * w, signed)
        r = a * b
        if op == "mad":
            r = r + ex.operand(st, ins.args[3], 2 * w)[0]
        return ex.write(st, d, r, None, guard)
    if any(m not in P.TYPES and m not in INT_MODS for m in ins.mods):
        return _uf_op(ex, st, ins, guard)          # e.g. max.relu: not modelled, a function of its inputs
    srcs = [ex.operand(st, a, w, signed) for a in ins.args[1:]]
    vals = [v for v, _ in srcs]
    tags = [tg for _, tg in srcs]
    tag = None
    if op in ("add", "sub"):
        a, b = vals
        r = a + b if op == "add" else a - b
        if op == "add":
            tag = _join(*tags)
            if tags[0] is not None and tags[1] is not None:
                tag = "?"
        else:
            tag = tags[0] if tags[1] is None else (None if tags[0] == tags[1] else "?")
    elif op in ("mul", "mad"):
        a, b = vals[0], vals[1]
        if "hi" in ins.mods:
            p = fit(a, 2 * w, signed) * fit(b, 2 * w, signed)
            r = z3.Extract(2 * w - 1, w, p)
        else:
            r = a * b
        if op == "mad":
            r = r + vals[2]
        tag = "?" if any(tags) else None
    elif op in ("div", "rem"):
        a, b = vals
        if op == "div":
            q = a / b if signed else z3.UDiv(a, b)
        else:
            q = z3.SRem(a, b) if signed else z3.URem(a, b)
        # PTX leaves x / 0 unspecified: a fresh value, unless the divisor is never 0 (a dim, say),
        # where bvudiv/bvsdiv/bvurem/bvsrem are the exact result and no over-approximation remains
        r = q if _always(ex, b != 0) else z3.If(b == 0, ex.fresh(f"div0_{ins.index}", w), q)
        tag = "?" if any(tags) else None
    elif op == "abs":
        r = z3.If(vals[0] < 0, -vals[0], vals[0])
    elif op == "neg":
        r = -vals[0]
    elif op in ("min", "max"):
        a, b = vals
        lt = (a < b) if signed else z3.ULT(a, b)
        r = z3.If(lt, a, b) if op == "min" else z3.If(lt, b, a)
        tag = "?" if any(tags) else None
    elif op in ("and", "or", "xor"):
        a, b = vals
        r = a & b if op == "and" else a | b if op == "or" else a ^ b
        tag = "?" if any(tags) else None
        if op != "xor" and ex.async_proxy and (tags[0] is None) != (tags[1] is None):
            tag = tags[0] or tags[1]     # a pointer aligned down (and) or an offset or-ed in: a hint, as every
                                         # tag (trusted only where the access is proven inside that buffer);
                                         # wgmma kernels only (their 1024-byte aligned stages), so that the
                                         # other kernels' proofs stay as they were
    elif op == "not":
        r = ~vals[0]
    elif op in ("shl", "shr"):
        a = vals[0]
        s = fit(ex.operand(st, ins.args[2], 32)[0], w) if w >= 32 else \
            z3.If(z3.UGT(ex.operand(st, ins.args[2], 32)[0], w), bv(w, w), fit(ex.operand(st, ins.args[2], 32)[0], w))
        r = a << s if op == "shl" else (a >> s if signed else z3.LShR(a, s))
        tag = "?" if any(tags) else None
    else:
        return _uf_op(ex, st, ins, guard)
    if "sat" in ins.mods:
        if op not in ("add", "sub", "mad") or not signed or ("mad" == op and "hi" not in ins.mods):
            return _uf_op(ex, st, ins, guard)
        r = _saturate(vals, op, r, w)
    ex.write(st, d, r, tag, guard)


def _ticket(ex, st, ins, guard, addr, tag) -> bool:
    """atom.add of a positive constant (an integer counter), outside every loop, into a named buffer: its
    result is a fresh value recorded as a ticket; prove.py constrains it (distinct per thread, within the
    counter's range) only where every access of that counter in the launch is this atomic, else it stays
    arbitrary. False (havoc) for any other atomic."""
    if "add" not in ins.mods or ins.type not in ("u32", "s32", "u64", "s64") or len(ins.args) != 3 \
            or any(m not in ("global", "add", ins.type, "relaxed", "gpu", "sys") for m in ins.mods) \
            or not isinstance(ins.args[0], P.Reg) or not isinstance(ins.args[2], P.Imm) or ins.args[2].is_float \
            or int(ins.args[2].value) <= 0 or not isinstance(tag, str) or tag == "?" or ins.vector != 1 \
            or any(ex.k.block_of[ins.index] in L.body for L in ex.loops.values()):
        return False
    w = P.TYPES[ins.type]
    t = ex.fresh(f"ticket{ins.index}", w)
    pc = st.pc if guard is None else z3.And(st.pc, guard)
    ex.trace.tickets.append((ins.index, t, pc, tag, addr, int(ins.args[2].value), w))
    ex.write(st, ins.args[0], t, None, guard)
    return True


def _popc(ex, st, ins, guard):
    """popc.b32 / popc.b64: the number of one bits, exactly (a sum of the bits, 7 bits wide, zero-extended);
    recorded, so that prove.py can state what the solver would find dear: fewer bits set, a smaller count."""
    w = P.TYPES[ins.type]
    a = ex.operand(st, ins.args[1], w)[0]
    r = z3.Sum([z3.ZeroExt(6, z3.Extract(i, i, a)) for i in range(w)])
    ex.trace.popcs.append((ins.index, a, r))
    ex.trace.defs += [z3.ULE(r, w), z3.Implies(z3.Extract(w - 1, w - 1, a) == 0, z3.ULE(r, w - 1))]   # facts: cheap bounds
    ex.write(st, ins.args[0], z3.ZeroExt(_width_of(ex, ins.args[0], 32) - 7, r), None, guard)


def _ballot(ex, st, ins, guard) -> bool:
    """vote.sync.ballot.b32 d, p, 0xffffffff (full member mask) outside every loop and reached by every thread
    (no path condition, no guard): the warp's mask, one value for the warp's threads (checker/prover/prove.py
    equates the two symbolic threads' values when they share a warp: each thread runs it once, all 32 lanes
    together) whose bit at the thread's lane is its predicate. False (not modelled: havoc) otherwise."""
    if ins.mods[:3] != ("sync", "ballot", "b32") or len(ins.args) != 3 or guard is not None \
            or not isinstance(ins.args[0], P.Reg) or ex.k.regs.get(ins.args[0].name) not in ("b32", "u32", "s32"):
        return False
    m = ex.operand(st, ins.args[2], 32)[0]
    if not z3.is_true(z3.simplify(m == bv(0xffffffff, 32))) or not z3.is_true(z3.simplify(st.pc)) \
            or any(ex.k.block_of[ins.index] in L.body for L in ex.loops.values()):
        return False
    p = ex.operand(st, ins.args[1], 0)[0]
    v = ex.fresh(f"ballot{ins.index}", 32)
    lane = ex.special["%laneid"]
    ex.trace.defs.append((z3.LShR(v, fit(lane, 32)) & 1) == z3.If(p, bv(1, 32), bv(0, 32)))
    ex.trace.ballots.append((ins.index, v))
    ex.write(st, ins.args[0], v, None, None)
    return True


def _saturate(vals, op, r, w):
    """add.sat / sub.sat / mad.hi.sat (signed): the exact result clamped to [MININT, MAXINT]."""
    a, b = (fit(v, w + 2, True) for v in vals[:2])
    if op == "mad":                   # r - c is the high half of the product
        a, b = fit(r - vals[2], w + 2, True), fit(vals[2], w + 2, True)
    x = a - b if op == "sub" else a + b
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return z3.If(x > hi, bv(hi, w), z3.If(x < lo, bv(lo, w), z3.Extract(w - 1, 0, x)))


def _setp(ex, st, ins, guard):
    t = ins.type
    cmp = ins.mods[0]
    d = ins.args[0]
    if t in FLOAT:
        w = P.TYPES[t]
        a, b = ex.operand(st, ins.args[1], w)[0], ex.operand(st, ins.args[2], w)[0]
        r = ex.uf(".".join(("setp",) + tuple(m for m in ins.mods if m not in ("and", "or", "xor"))), [a, b], 0)
    else:
        w = P.TYPES[t]
        signed = t in SIGNED
        a, b = ex.operand(st, ins.args[1], w)[0], ex.operand(st, ins.args[2], w)[0]
        table = CMP_S if signed and cmp in CMP_S else CMP_U
        if cmp not in table:
            raise Unsupported(f"comparison {cmp}: {ins.text.strip()}")
        r = table[cmp](a, b)
    nr = z3.Not(r)
    if len(ins.args) > 3:
        c = ex.operand(st, ins.args[3], 0)[0]
        comb = next((m for m in ins.mods if m in ("and", "or", "xor")), None)
        f = {"and": z3.And, "or": z3.Or, "xor": z3.Xor}[comb]
        r, nr = f(r, c), f(nr, c)
    if isinstance(d, P.PredPair):
        ex.write(st, d.a, r, None, guard)
        ex.write(st, d.b, nr, None, guard)
    else:
        ex.write(st, d, r, None, guard)


def _cvt(ex, st, ins, guard):
    ts = ins.types
    if len(ts) != 2:
        raise Unsupported(f"conversion: {ins.text.strip()}")
    dt, stp = ts
    if dt in FLOAT or stp in FLOAT or "sat" in ins.mods:
        return _uf_op(ex, st, ins, guard)
    sw, dw = P.TYPES[stp], P.TYPES[dt]
    v, tag = ex.operand(st, ins.args[1], sw)
    r = fit(v, dw, stp in SIGNED)
    ex.write(st, ins.args[0], fit(r, _width_of(ex, ins.args[0], dw), dt in SIGNED), tag, guard)


def _address(ex, st, a):
    if not isinstance(a, P.Addr):
        raise Unsupported(f"memory operand {a!r}")
    off = a.offset
    if isinstance(a.base, P.Reg):
        v = ex.read(st, a.base.name)
        return fit(v, 64) + off, st.tags.get(a.base.name)
    if isinstance(a.base, P.Sym):
        buf = ex.env.buffer_for_symbol(a.base.name, ex.k)
        if buf is None:
            raise Unsupported(f"address of unknown symbol {a.base.name}")
        return buf.base + off, buf.name
    return bv(off, 64), "?"


def _load(ex, st, ins, guard):
    a = ins.args[1]
    ew = _w(ins)
    n = ins.vector
    d = ins.args[0]
    signed = ins.type in SIGNED
    if ins.space == "param":
        if not isinstance(a, P.Addr) or not isinstance(a.base, P.Sym):
            raise Unsupported(f"parameter load: {ins.text.strip()}")
        v, tag = ex.env.param_value(ex.k, a.base.name, a.offset, ew)
        return ex.write(st, d, fit(v, _width_of(ex, d, ew), signed), tag, guard)
    addr, tag = _address(ex, st, a)
    ex.record(st, ins, "read", tag, addr, ew // 8 * n, guard, noncoherent=ins.op == "ldu" or "nc" in ins.mods)
    alts = ex.resolve(tag) if tag is not None else [(None, None)]
    bufs = [(c, ex.env.buffers.get(t)) for c, t in alts]
    items = d.items if isinstance(d, P.Vec) else (d,)
    for i, x in enumerate(items):
        if isinstance(x, P.Sink):
            continue
        if all(b is not None and b.role == "in" for _, b in bufs):
            v = None
            ai = addr + i * (ew // 8)
            for c, buf in reversed(bufs):
                vi = _input_value(ex, buf, ai, ew)
                v = vi if v is None or c is None else z3.If(c, vi, v)
        else:
            v = ex.fresh(f"ld{ins.index}", ew)
        ex.write(st, x, fit(v, _width_of(ex, x, ew), signed), None, guard)


def _input_value(ex, buf, addr, w):
    """The w-bit value at addr of input buffer buf: an uninterpreted function of the address (the
    same for every thread). The buffer's value precondition (lo <= element <= hi) holds per element,
    so only an element-wide value gets it. A wider load (.b64 holding two i32 indices) is the
    concatenation of the elements it covers (little-endian: lane j is the element at addr + j*size),
    each with the precondition; a narrower one (a byte of an element) gets none. Lanes are elements
    only when addr is element-aligned (bases are 256-aligned; a load must be aligned to its own
    width, which a multiple of the element's is), hence the guard where that is not evident."""
    eb = buf.elem_bits
    if buf.values is None or eb < 8 or eb & (eb - 1) or w < eb or w % eb:
        return ex.uf(f"mem_{buf.name}_{w}", [addr], w)
    n, step = w // eb, eb // 8
    lanes = [ex.uf(f"mem_{buf.name}_{eb}", [addr + j * step], eb) for j in range(n)]
    lo, hi = buf.values
    ok = []
    for x in lanes:
        xv = fit(x, lo.size(), buf.signed)
        ok.append(z3.And(lo <= xv, xv <= hi))
    nb = step.bit_length() - 1            # log2 of the element's bytes
    aligned = z3.Extract(nb - 1, 0, addr) == 0 if nb else z3.BoolVal(True)
    if _always(ex, aligned):
        ex.trace.defs += ok            # one And(lo <= x, x <= hi) each: the form intabs learns bounds from
    else:
        ex.trace.defs.append(z3.Implies(aligned, z3.And(*ok)))
    return lanes[0] if n == 1 else z3.Concat(*reversed(lanes))


def _always(ex, f) -> bool:
    """f holds under the launch's constraints for this thread (a quick check in deterministic units; False if
    unsure)."""
    return always([*ex.env.constraints, *ex.env.thread_constraints(ex.t)], f, text=ex.env.text_of(ex.t))


def _barrier(ex, st, ins, guard):
    if "warp" in ins.mods:
        return _warp_sync(ex, st, ins, guard)
    if "arrive" in ins.mods or "cta" in ins.mods and "arrive" in ins.mods:
        raise Unsupported(f"split barriers are not modelled: {ins.text.strip()}")
    args = ins.args
    if "red" in ins.mods:           # bar.red d, a{, b}, {!}c: b a thread count (a part of the block)
        if len(args) != 3:
            raise Unsupported(f"barrier with a thread count or register id: {ins.text.strip()}")
        args = args[1:2]
        _havoc_dests(ex, st, ins, guard)
    if not args or not isinstance(args[0], P.Imm) or len(args) > 1:
        raise Unsupported(f"barrier with a thread count or register id: {ins.text.strip()}")
    if guard is not None:
        ex.trace.branches.append(BranchCheck(ins, st.pc, guard, st.epoch, st.loop_ks, st.wepoch))
        st.epoch = z3.If(guard, st.epoch + 1, st.epoch)
    else:
        st.epoch = st.epoch + 1


def _warp_sync(ex, st, ins, guard):
    """bar.warp.sync: counted (st.wepoch) only with the full member mask; any other mask orders
    nothing here (no count). Whether the count orders accesses of two threads of one warp depends
    on the warp executing its syncs convergently, checked in checker/prover/prove.py."""
    if not is_warp_sync(ins):
        return
    if guard is not None:
        ex.trace.branches.append(BranchCheck(ins, st.pc, guard, st.epoch, st.loop_ks, st.wepoch, False, True))
        st.wepoch = z3.If(guard, st.wepoch + 1, st.wepoch)
    else:
        st.wepoch = st.wepoch + 1


# ---- bit fields with constant position and length --------------------------------------------------------

def _bit_field(ex, st, ins, guard) -> bool:
    """bfe / bfi whose position and length are immediates (as NVRTC emits them): exact. False (left to
    the uninterpreted function) for register positions or lengths or other widths."""
    t = ins.type
    if t not in ("u32", "s32", "b32", "u64", "s64", "b64"):
        return False
    w = P.TYPES[t]
    pos_len = ins.args[-2:]
    if not all(isinstance(x, P.Imm) and not x.is_float for x in pos_len):
        return False
    pos, ln = (int(x.value) & 0xFF for x in pos_len)
    if ins.op == "bfe":
        if ln == 0 or pos + ln > w:       # a field past the register's top: left to the function
            return False
        a = ex.operand(st, ins.args[1], w)[0]
        r = fit(z3.Extract(pos + ln - 1, pos, a), w, t[0] == "s")
    else:
        a = ex.operand(st, ins.args[1], w)[0]
        b = ex.operand(st, ins.args[2], w)[0]
        if ln == 0 or pos >= w:
            r = b
        else:
            n = min(ln, w - pos)
            mask = ((1 << n) - 1) << pos
            r = (b & bv(~mask, w)) | ((a << bv(pos, w)) & bv(mask, w))
    ex.write(st, ins.args[0], r, None, guard)
    return True


# ---- tensor-core fragments and asynchronous copies ---------------------------------------------------------

def _ldmatrix(ex, st, ins, guard):
    """ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16: a warp-collective shared read in which lane
    l < 8 * num supplies the address of one 16-byte row (the lanes above supply none); each thread is
    recorded reading the row at its own address, so the two-thread quantification covers the union. The
    values are other lanes' rows: fresh."""
    num = next((int(m[1]) for m in ins.mods if m in ("x1", "x2", "x4")), None)
    if num is None or ins.space not in ("shared",) or "m8n8" not in ins.mods:
        raise Unsupported(f"ldmatrix form: {ins.text.strip()}")
    addr, tag = _address(ex, st, ins.args[1])
    lane = ex.special["%laneid"]
    supplies = z3.ULT(lane, bv(8 * num, 32))
    ex.record(st, ins, "read", tag, addr, 16, supplies if guard is None else z3.And(guard, supplies))
    _havoc_dests(ex, st, ins, guard)


def _cp_async(ex, st, ins, guard):
    """cp.async{.ca,.cg}.shared.global [dst], [src], size{, src_size}: the global source is read at issue
    (when src_size is a register, under src_size != 0: the full size, an over-approximation of a
    partial copy); the shared write is pending (symbolic.Executor.record) until a wait completes it:
    cp.async.wait_all completes every copy of the thread, cp.async.wait_group N those with more than N
    commit groups closed since their issue (counted along the path; the fewest where paths merge).
    Waits and issues advance the thread's async counter st.aseq (the program order of a copy against
    this thread's own accesses)."""
    if "async" not in ins.mods or any(m in ins.mods for m in ("bulk", "tensor", "mbarrier", "reduce")):
        raise Unsupported(f"asynchronous copy form: {ins.text.strip()}")
    if "commit_group" in ins.mods:
        if guard is not None:
            raise Unsupported(f"predicated commit: {ins.text.strip()}")
        st.pending = tuple((a, n + 1, c) for a, n, c in st.pending)
        return
    if "wait_all" in ins.mods or "wait_group" in ins.mods:
        if guard is not None:
            raise Unsupported(f"predicated wait: {ins.text.strip()}")
        st.aseq = st.aseq + 1
        keep = need = None
        if "wait_group" in ins.mods:
            if not isinstance(ins.args[0], P.Imm):
                raise Unsupported(f"wait_group without an immediate: {ins.text.strip()}")
            need = int(ins.args[0].value) + 1
        keep = []
        for a, n, c in st.pending:
            if need is None or n >= need:
                ex.complete(a, c, st.pc, st.epoch, st.aseq)
            else:
                keep.append((a, n, c))
        st.pending = tuple(keep)
        return
    if ins.space != "shared" or "global" not in ins.mods or len(ins.args) < 3 or not isinstance(ins.args[2], P.Imm):
        raise Unsupported(f"asynchronous copy form: {ins.text.strip()}")
    size = int(ins.args[2].value)
    st.aseq = st.aseq + 1
    src, stag = _address(ex, st, ins.args[1])
    rguard = guard
    extra = P.cp_async_operands(ins)
    if len(extra) > 1:
        raise Unsupported(f"asynchronous copy form: {ins.text.strip()}")
    if extra:           # src-size: the source is read where it is non-zero; ignore-src: where it is false
        if isinstance(extra[0], P.Reg) and ex.k.regs.get(extra[0].name) == "pred":
            reads = z3.Not(_val(ex, st, extra[0], 0)[0])
        else:
            reads = ex.operand(st, extra[0], 32)[0] != 0
        rguard = reads if guard is None else z3.And(guard, reads)
    ex.record(st, ins, "read", stag, src, size, rguard, space="global")      # the source's space, not .shared
    dst, dtag = _address(ex, st, ins.args[0])
    ex.record(st, ins, "write", dtag, dst, size, guard, pending=True, space="shared")


# ---- warpgroup MMA: asynchronous shared reads through matrix descriptors --------------------------------

WGMMA_AB = ("bf16", "f16")
SHARED_WINDOW = 1 << 18      # a block's shared addresses lie below 2^18 (sm_90: 227 KB + 1 KB reserved)


def _wgmma(ex, st, ins, guard):
    """wgmma.{fence, commit_group, wait_group, mma_async}.sync.aligned. mma_async (m64nNk16, f32 accumulators,
    bf16 / f16 operands) in both forms of the PTX ISA:
      SS: {d}, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b;
      RS: {d}, {a0, a1, a2, a3}, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b (A from registers:
          register operands, read at issue as far as memory safety goes; only B is a shared read).
    Each descriptor operand's footprint (_footprint: K-major, imm-trans 0, or MN-major, imm-trans 1) is a
    pending read (Access.async_read), open until the wgmma.wait_group that retires its commit group
    (wait_group N retires the groups closed before the last N; an operation not yet committed stays
    pending); the accumulators become fresh values at issue and again at every wait (they are written
    when the operation retires). The warpgroup must execute it together: a branch around it is checked like
    one around a barrier (checker/ptx/cfg.is_block_collective) and the warpgroup's descriptors must agree
    (checker/prover/prove.py, from Trace.collectives). Anything else: Unsupported."""
    kind = ins.mods[0] if ins.mods else ""
    if not {"sync", "aligned"} <= set(ins.mods):
        raise Unsupported(f"wgmma form: {ins.text.strip()}")
    if guard is not None:
        raise Unsupported(f"predicated wgmma: {ins.text.strip()}")
    if kind == "fence":           # orders register accesses only
        return
    if kind == "commit_group":
        st.wpending = tuple((a, n + 1, c) for a, n, c in st.wpending)
        return
    if kind == "wait_group":
        if len(ins.args) != 1 or not isinstance(ins.args[0], P.Imm):
            raise Unsupported(f"wgmma.wait_group without an immediate: {ins.text.strip()}")
        need = int(ins.args[0].value) + 1
        st.aseq = st.aseq + 1
        keep = []
        for a, n, c in st.wpending:
            if n >= need:
                ex.retire(a, c, st.pc, st.epoch, st.aseq)
            else:
                keep.append((a, n, c))
        st.wpending = tuple(keep)
        for r in ex.wgmma_dests:      # whatever retired here (or earlier, in another iteration) wrote them
            ex.write(st, r, ex.fresh(f"acc{ins.index}", P.TYPES[ex.k.regs[r.name]]), None, None)
        return
    if kind != "mma_async":
        raise Unsupported(f"wgmma form: {ins.text.strip()}")
    shape = next((m for m in ins.mods if m.startswith("m64n") and m.endswith("k16")), None)
    types = [m for m in ins.mods if m in P.TYPES]
    if shape is None or len(types) != 3 or types[0] != "f32" or types[1] not in WGMMA_AB or types[2] != types[1]:
        raise Unsupported(f"wgmma shape or types: {ins.text.strip()}")
    n = int(shape[4:-3])
    descs = _wgmma_operands(ex, ins, n)
    st.aseq = st.aseq + 1
    shared = {b.name for b in ex.env.buffers.values() if b.kind == "shared"}
    tag = shared.pop() if len(shared) == 1 else None     # a hint, trusted where proven (checker/prover/prove.py _justify)
    vals = []
    for reg, rows, mn_major in descs:
        desc = ex.operand(st, reg, 64)[0]
        vals.append(desc)
        for lo, width in _footprint(ex, desc, rows, ins, mn_major):
            if not _covered(ex, st, lo, width):
                ex.record(st, ins, "read", tag, lo, width, None, async_read=True, space="shared")
    ex.trace.collectives.append((ins, st.pc, st.loop_ks, st.epoch, tuple(vals)))
    _havoc_dests(ex, st, ins, None)


def _flag(x) -> int | None:
    """An imm-trans operand: the integer immediate 0 or 1, else None."""
    if isinstance(x, P.Imm) and not x.is_float and int(x.value) in (0, 1):
        return int(x.value)
    return None


def _wgmma_operands(ex, ins, n) -> list:
    """(descriptor register, rows, MN-major) of each shared operand of a mma_async: A (64 rows) and B (n rows)
    in the SS form, B alone in the RS form; the operand counts exactly as the ISA has them, the accumulators
    n / 2 f32 registers, A's four b32 registers; else Unsupported."""
    args = ins.args
    d = args[0] if args else None
    rs = len(args) == 7 and isinstance(args[1], P.Vec)
    if not isinstance(d, P.Vec) or n % 8 or not 8 <= n <= 256 or len(d.items) != n // 2 \
            or not all(isinstance(x, P.Reg) and ex.k.regs[x.name] in ("f32", "b32") for x in d.items):
        raise Unsupported(f"wgmma accumulators: {ins.text.strip()}")
    if rs:
        a = args[1].items
        if len(a) != 4 or not all(isinstance(x, P.Reg) and ex.k.regs[x.name] in ("b32", "u32", "s32") for x in a):
            raise Unsupported(f"wgmma A registers: {ins.text.strip()}")
        regs, flags = args[2:3], [_flag(args[6])]
    elif len(args) == 8:
        regs, flags = args[1:3], [_flag(x) for x in args[6:8]]
    else:
        raise Unsupported(f"wgmma operands: {ins.text.strip()}")
    if any(f is None for f in flags) or not all(isinstance(x, P.Reg) for x in regs) \
            or any(ex.k.regs[x.name] not in ("b64", "u64", "s64") for x in regs):
        raise Unsupported(f"wgmma descriptors or transpose immediates: {ins.text.strip()}")
    rows = (n,) if rs else (64, n)
    return [(r, m, bool(f)) for r, m, f in zip(regs, rows, flags)]


def _covered(ex, st, lo, width) -> bool:
    """An uncommitted wgmma read of the same bytes, issued earlier on this path in this barrier epoch, is
    pending: it retires with this one (the same commit group) and spans all this one does, so this one needs
    no record of its own (the k16 steps of one tile read the same 128-byte rows)."""
    for a, n, _ in st.wpending:
        if n == 0 and a.width == width and a.pc is st.pc and a.epoch.eq(st.epoch) and \
                (a.addr.eq(lo) or _always(ex, a.addr == lo)):
            return True
    return False


def _field(desc, hi, lo, ins):
    v = z3.simplify(z3.Extract(hi, lo, desc))
    if not z3.is_bv_value(v):
        raise Unsupported(f"wgmma descriptor bits {lo}-{hi} not a constant: {ins.text.strip()}")
    return v.as_long()


def _footprint(ex, desc, rows, ins, mn_major=False) -> list:
    """[(first byte, bytes)] of shared memory that an operand of `rows` rows (its M or N extent) under the
    128-byte swizzle may read in one k16 step. The swizzle XORs address bits 4-6 with bits 7-9: it permutes
    16-byte chunks within a 128-byte row, so each range is the 128-byte rows that hold the unswizzled
    addresses (checker/emulator/wgmma.py, after the ISA's canonical layouts; tests/checker/prover/test_wgmma_footprint.py checks
    that the ranges hold every byte the emulator reads):
      K-major (imm-trans 0): (r, k) at start + (r / 8) SBO + (r % 8) 128 + 2 k: one range from the start,
        (rows / 8 - 1) SBO + 7 128 + 32 bytes; LBO unused;
      MN-major (imm-trans 1): (r, k) at start + (r / 64) LBO + 2 (r % 64) + (k % 8) 128 + (k / 8) SBO: one
        range per group i of 64 rows, from start + i LBO, SBO + 7 128 + 2 c bytes (c the group's rows).
    A range of `span` bytes from an address whose offset in its 128-byte row is at most e (0, 96 or 127,
    the least that holds for every thread under the launch's constraints) lies in the ceil((e + span) / 128)
    rows from that row. SBO, LBO and the mode must be constants, the base offset 0; else Unsupported."""
    if _field(desc, 63, 62, ins) != 1 or _field(desc, 51, 49, ins) != 0:
        raise Unsupported(f"wgmma descriptor: only the 128-byte swizzle with base offset 0: {ins.text.strip()}")
    lbo = _field(desc, 29, 16, ins) << 4
    sbo = _field(desc, 45, 32, ins) << 4
    if sbo == 0 or rows % 8 or not 8 <= rows <= 256:
        raise Unsupported(f"wgmma descriptor stride: {ins.text.strip()}")
    start = z3.ZeroExt(46, z3.Concat(z3.Extract(13, 0, desc), bv(0, 4)))     # 18-bit shared address
    if mn_major:
        spans = [(start + i * lbo, sbo + 896 + 2 * min(64, rows - 64 * i)) for i in range((rows + 63) // 64)]
    else:
        spans = [(start, (rows // 8 - 1) * sbo + 928)]
    out = []
    for first, span in spans:
        off = z3.Extract(6, 0, first)
        e = next((x for x in (0, 96) if _always(ex, z3.ULE(off, bv(x, 7)))), 127)
        out.append((first & bv(~127, 64), -(-(e + span) // 128) * 128))
    return out


def shared_window(bufs) -> list:
    """Descriptors hold 18-bit shared addresses: every shared buffer lies below 2^18 (a hardware fact; added
    to a wgmma kernel's constraints once all its buffers are known, checker/prover/prove.py)."""
    out = []
    for b in bufs.values():
        if b.kind == "shared":
            W = b.size.size()
            out.append(z3.ULE(z3.ZeroExt(W + 2 - 64, b.base) + z3.ZeroExt(2, b.size), SHARED_WINDOW))
    return out


def _proxy_fence(ex, st, ins, guard):
    """fence.proxy.async (all state spaces or .shared::cta): the thread's generic writes that have landed
    (no cp.async still pending) become visible to the async proxy (wgmma reads) from this epoch on; any
    other proxy fence orders nothing here."""
    if "async" not in ins.mods or any(m not in ("proxy", "async", "shared::cta") for m in ins.mods):
        return
    pc = st.pc if guard is None else z3.And(st.pc, guard)
    pend = {id(a): c for a, _, c in st.pending}
    keep = []
    for a, n, c in st.unfenced:
        p = pend.get(id(a))
        done = c if p is None else z3.And(c, z3.Not(p))
        ex.fenced(a, done, pc, st.epoch)
        rest = p if guard is None else (z3.Or(p, z3.Not(guard)) if p is not None else z3.Not(guard))
        if rest is not None:
            keep.append((a, n, z3.And(c, rest)))
    st.unfenced = tuple(keep)
