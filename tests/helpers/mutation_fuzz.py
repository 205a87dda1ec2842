"""Mutation fuzzing of the prover's soundness: take correct kernels (the prover corpus's correct ones and
the registry's safe variants), mutate their PTX (an address off by one element, a bound check off by
one, a dropped or inverted guard, a dropped barrier, a block barrier turned into __syncwarp, a barrier
under a predicate or after a predicated exit, a doubled stride, a store redirected to an input buffer,
a wider load/store), run each mutant in the CPU emulator at a few small in-range shapes looking for a
concrete violation of each property, and run the prover on it. Soundness: no mutant whose
emulator run violates property P is `proven` on P (at those dims: all-dims scope, or a named case).

The emulator oracle (alignment checks off: only the four properties count): an out-of-bounds stop or
an access outside every buffer (in_bounds); a write or atomic into an `in` buffer (read_only); two
distinct threads touching one byte, one writing, not both atomic, in different blocks (global) or in one
block between the same barriers (race_free); a deadlock, threads at different barriers, or a barrier
released while part of the block has exited (barrier_safe).

The mutants, the oracle and the soundness check; bench/mutation_fuzz.py runs them over every subject,
tests/checker/emulator/test_mutation_fuzz.py over a fast subset."""
from __future__ import annotations

import contextlib
import random
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from kreg.checker.emulator import machine as E
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.compile import compile_cuda
from kreg.registry.schema import DTYPES, load_op, load_variant

ROOT = Path(__file__).resolve().parents[2]

CORPUS = ROOT / "tests" / "data" / "prover_corpus"
# (mutation kind, property) -> the known open defect class of the prover it hits (being fixed elsewhere)
KNOWN: dict = {}     # none open: "predicated exit before a barrier" was closed in prover-0.3
MAX_THREADS = 20_000      # a fixed grid of 132 x 128 is fine; named cases get CASE_THREADS
CASE_THREADS = 1024
MAX_BYTES = 4 << 20
DIM_CAP = 48            # random dims are drawn from [lo, lo + DIM_CAP] (and multiples for `% k` requirements)
MAX_STEPS = 50_000
MAX_TRACE = 1 << 18


# ---- the kernels ---------------------------------------------------------------------------------------

@dataclass
class Subject:
    name: str
    variant: object
    op: object
    ptx: str


@cache
def subjects() -> tuple:
    """Correct corpus kernels, then the registry's safe variants."""
    out = []
    ops = {o.name: o for o in (load_op(p) for p in sorted((CORPUS / "ops").glob("*.yaml")))}
    labels = yaml.safe_load((CORPUS / "labels.yaml").read_text())
    for name in sorted(n for n, lab in labels.items() if lab["correct"]):
        v = load_variant(next(CORPUS.glob(f"*/*/{name}.yaml")), ops)
        out.append(Subject(name, v, ops[v.op], _compile(v)))
    from kreg.registry.catalog import load_catalog
    cat = load_catalog()
    for e in cat.entries:
        if e.variant.safety == "safe":
            out.append(Subject(e.variant.name, e.variant, cat.ops[e.variant.op], _compile(e.variant)))
    return tuple(out)


def _compile(v):
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


# ---- mutations -----------------------------------------------------------------------------------------

@dataclass
class Mutant:
    subject: Subject
    kind: str
    what: str
    ptx: str
    violations: dict = field(default_factory=dict)    # prop -> list of dims where the emulator saw it
    ran: int = 0                                       # shapes the emulator completed or stopped on a violation
    verdicts: dict = field(default_factory=dict)       # prop -> (status, scope, reason)

    @property
    def name(self):
        return f"{self.subject.name}:{self.kind}:{self.what}"


def _edit(lines, i, new):
    out = list(lines)
    out[i] = new
    return "\n".join(out)


def _swap_param(k, variant, op):
    """{out-param symbol: in-param symbol} for the first launch's pointer params (for redirection)."""
    ln = variant.launches[0]
    role = {p.name: op.params[a.param].role for a, p in zip(ln.args, k.params)
            if a.param is not None and a.param in op.params and op.params[a.param].shape}
    ins = [n for n, r in role.items() if r == "in"]
    return {n: ins[0] for n, r in role.items() if r in ("out", "inout")} if ins else {}


def mutations(s: Subject):
    """Every (kind, description, PTX) mutant of a subject's PTX; the first launch's kernel is mutated."""
    lines = s.ptx.split("\n")
    module = P.parse(s.ptx)
    k = module.kernel(s.variant.launches[0].entry)
    swap = _swap_param(k, s.variant, s.op)
    setp = None                  # the last setp before this instruction: (its line index, its predicate)
    for ins in k.instrs:
        i = ins.line - 1
        text = lines[i]
        if ins.op not in text:
            continue
        at = f"L{ins.line}"
        if ins.op in ("ld", "st", "atom", "red") and ins.space != "param":
            w = max(P.TYPES.get(ins.type or "b32", 32) // 8, 1)
            m = re.search(r"\[([%\w$]+)(?:\+(-?\d+))?\]", text)
            if m:
                off = int(m[2] or 0)
                for d, tag in ((w, "+1"), (-w, "-1")):
                    new = f"[{m[1]}+{off + d}]" if off + d else f"[{m[1]}]"
                    yield "addr" + tag, at, _edit(lines, i, text[:m.start()] + new + text[m.end():])
            if ins.op in ("ld", "st"):
                wider = _widen(text, ins)
                if wider:
                    yield "widen", at, _edit(lines, i, wider)
        if ins.op == "setp" and ins.type and ins.type[0] in "us" and ins.mods[0] in _OFF_BY_ONE:
            c = ins.mods[0]
            yield "bound", at, _edit(lines, i, text.replace(f"setp.{c}.", f"setp.{_OFF_BY_ONE[c]}.", 1))
        if ins.op == "bra" and ins.pred is not None and k.target(ins.args[0].name) > ins.index:
            yield "drop-guard", at, _edit(lines, i, "")
            flip = text.replace("@!%", "@%", 1) if "@!%" in text else text.replace("@%", "@!%", 1)
            yield "invert-guard", at, _edit(lines, i, flip)
        if ins.op in ("bar", "barrier") and "warp" not in ins.mods:
            yield "drop-barrier", at, _edit(lines, i, "")
            yield "warp-barrier", at, _edit(lines, i, f"{text[:len(text) - len(text.lstrip())]}bar.warp.sync -1;")
            if setp is not None and ins.pred is None:      # a thread-dependent predicate, most likely
                j, p = setp
                yield "guard-barrier", at, _edit(lines, i, f"@{p} {text.strip()}")
                yield "exit-before-barrier", at, _edit(lines, j, f"{lines[j]}\n@{p} ret;")
        if ins.op == "setp" and isinstance(ins.args[0], P.Reg):
            setp = (i, ins.args[0].name)
        if ins.op == "mul" and "wide" in ins.mods and isinstance(ins.args[2], P.Imm):
            yield "stride", at, _edit(lines, i, re.sub(r",\s*(-?\d+)\s*;", lambda m: f", {2 * int(m[1])};", text))
        if ins.op == "shl" and ins.type in ("b64", "b32") and isinstance(ins.args[2], P.Imm):
            yield "stride", at, _edit(lines, i, re.sub(r",\s*(\d+)\s*;", lambda m: f", {int(m[1]) + 1};", text))
        if ins.op == "ld" and ins.space == "param" and isinstance(ins.args[1], P.Addr) and \
                getattr(ins.args[1].base, "name", None) in swap:
            src = ins.args[1].base.name
            yield "redirect", at, _edit(lines, i, text.replace(src, swap[src], 1))


_OFF_BY_ONE = {"lt": "le", "le": "lt", "gt": "ge", "ge": "gt", "lo": "ls", "ls": "lo", "hi": "hs", "hs": "hi"}
_WIDER = {"8": "16", "16": "32", "32": "64"}


def _widen(text, ins):
    """ld/st of twice the bytes: .v2 -> .v4 (items repeated), or a scalar type of double width."""
    if ins.vector == 2:
        m = re.search(r"\{([^}]*)\}", text)
        return text.replace(".v2.", ".v4.", 1)[:m.start()] + "{" + m[1] + ", " + m[1] + "}" + text[m.end():]
    if ins.vector == 1 and ins.type and ins.type[0] in "busf" and ins.type[1:] in _WIDER:
        t = ins.type
        return text.replace(f".{t}", f".{t[0]}{_WIDER[t[1:]]}", 1)
    return None


# ---- the emulator oracle -------------------------------------------------------------------------------

class _Machine(E._Machine):
    """The emulator's machine, alignment checks off, noting barriers released with part of a block gone."""
    partial_barrier = False

    def mem_locate(self, ins, space, addrs, idx, nbytes, kind, align=None):
        return super().mem_locate(ins, space, addrs, idx, nbytes, kind, 1)

    def _unblock(self):
        if self.bwait.any():
            live = np.bincount(self.blk, self.alive, self.nb)
            waiting = np.bincount(self.blk, self.bwait & self.alive, self.nb)
            if ((live == waiting) & (waiting > 0) & (live < self.tpb)).any():
                _Machine.partial_barrier = True
        return super()._unblock()


@contextlib.contextmanager
def _relaxed():
    old = E._Machine
    E._Machine = _Machine
    _Machine.partial_barrier = False
    try:
        yield
    finally:
        E._Machine = old


def shapes(op, variant, rnd, n):
    """Up to n dims dicts the op allows, with small launches: the op's small named cases first, then
    random draws near each dim's low end."""
    out = []
    for name, c in op.cases.items():
        if not op.dims_ok(c) and _small(op, variant, c, CASE_THREADS):
            out.append(dict(c))
    out = out[:max(1, n // 2)]
    for _ in range(200 * n):
        if len(out) >= n:
            break
        dims = {}
        for d, (lo, hi) in op.dims.items():
            top = min(hi, lo + DIM_CAP)
            v = rnd.choice([lo, rnd.randint(lo, top), rnd.randint(lo, top), min(hi, rnd.randint(lo, 4 * top))])
            if rnd.random() < 0.5:
                v = min(hi, -(-v // 8) * 8)
            dims[d] = v
        if not op.dims_ok(dims) and _small(op, variant, dims) and dims not in out:
            out.append(dims)
    return out


def _sizes(op, variant, dims):
    sizes = {}
    for name, p in op.params.items():
        if p.shape:
            sizes[name] = int(np.prod(op.shape(name, dims), dtype=object)) * DTYPES[op.dtype_of(name, variant.types)][0]
    for name, s in variant.scratch.items():
        sizes[name] = int(np.prod(variant.scratch_shape(name, dims), dtype=object)) * DTYPES[s.dtype][0]
    return sizes


def _small(op, variant, dims, threads=MAX_THREADS):
    try:
        if sum(_sizes(op, variant, dims).values()) > MAX_BYTES:
            return False
        for ln in variant.launches:
            g, b, _ = ln.geometry(dims)
            if int(np.prod(g)) * int(np.prod(b)) > threads:
                return False
    except Exception:
        return False
    return True


def emulate(variant, op, module, dims, rnd) -> set[str] | None:
    """The properties the emulator sees violated at these dims; None if it could not tell (unsupported
    instruction, step limit, trace too large)."""
    from kreg.checker.ptx.bind import bind
    sizes = _sizes(op, variant, dims)
    mem = E.Memory()
    ptrs = {n: mem.alloc(max(sz, 1), n) for n, sz in sizes.items()}
    for name, p in op.params.items():
        if name not in ptrs or not sizes[name]:
            continue
        size, dname, _ = DTYPES[op.dtype_of(name, variant.types)]
        cnt = sizes[name] // size
        if dname == "bfloat16":
            normal = np.array([rnd.gauss(0, 1) for _ in range(cnt)], np.float32)
            data = (normal.view(np.uint32) >> 16).astype(np.uint16)
        elif p.values is not None:
            lo, hi = int(p.values[0](dims)), int(p.values[1](dims))
            data = np.array([rnd.randint(lo, hi) for _ in range(cnt)], np.dtype(dname))
        elif np.dtype(dname).kind == "f":
            data = np.array([rnd.gauss(0, 1) for _ in range(cnt)], np.float32).astype(dname)
        else:
            data = np.array([rnd.randint(0, 3) for _ in range(cnt)], np.dtype(dname))
        mem.write(ptrs[name], data.tobytes())
    try:
        bound = bind(variant, op, module, dims, ptrs, {})
    except Exception:
        return None
    ranges = {n: (ptrs[n], ptrs[n] + sizes[n]) for n in ptrs}
    inputs = [ranges[n] for n, p in op.params.items() if p.role == "in" and n in ranges]
    bad = set()
    with _relaxed():
        for b in bound:
            try:
                res = E.launch(module, b.entry, b.grid, b.block, b.shared, b.args, mem, trace=True,
                               max_steps=MAX_STEPS, max_trace=MAX_TRACE)
            except E.EmulatorError as e:
                if e.kind == "out-of-bounds":
                    return bad | {"in_bounds"}
                if e.kind == "barrier-divergence":
                    return bad | {"barrier_safe"}
                return bad or None
            if _Machine.partial_barrier:
                bad.add("barrier_safe")
            acc = res.accesses or []
            tpb = int(np.prod(b.block))
            if any(a.kind != "read" and a.space == "global" and any(lo <= a.address < hi for lo, hi in inputs)
                   for a in acc):
                bad.add("read_only")
            if any(a.space == "global" and not any(lo <= a.address and a.address + a.width <= hi
                                                   for lo, hi in ranges.values()) for a in acc):
                bad.add("in_bounds")
            warp_sync = any(i.op == "bar" and "warp" in i.mods for i in module.kernel(b.entry).instrs)
            if _race(acc, b.grid, b.block, tpb, warp_sync):
                bad.add("race_free")
    return bad


def _race(acc, grid, block, tpb, warp_sync: bool = False) -> bool:
    """Two distinct threads touching one byte, one writing, not both atomic, unordered. The trace's
    epochs count block barriers only: in a kernel with a bar.warp.sync, two threads of one warp may be
    ordered by it, so such a pair is never counted (the oracle stays on the side of no violation)."""
    if not acc:
        return False
    kind = {"read": 0, "write": 1, "atomic": 2}
    n = len(acc)
    addr = np.fromiter((a.address for a in acc), np.uint64, n).view(np.int64)
    width = np.fromiter((a.width for a in acc), np.int64, n)
    blk = np.fromiter((a.block[0] + grid[0] * (a.block[1] + grid[1] * a.block[2]) for a in acc), np.int64, n)
    thr = blk * tpb + np.fromiter((a.thread[0] + block[0] * (a.thread[1] + block[1] * a.thread[2]) for a in acc),
                                  np.int64, n)
    ep = np.fromiter((a.epoch for a in acc), np.int64, n)
    kd = np.fromiter((kind[a.kind] for a in acc), np.int64, n)
    sh = np.fromiter((a.space == "shared" for a in acc), bool, n)
    rep = np.repeat(np.arange(n), width)
    byte = addr[rep] + (np.arange(len(rep)) - np.repeat(np.cumsum(width) - width, width))
    key = np.where(sh[rep], (blk[rep] << 40) + byte, -1 - byte)   # shared bytes are per block
    order = np.lexsort((thr[rep], key))
    key, rep = key[order], rep[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    t = thr[rep]
    multi = np.minimum.reduceat(t, starts) != np.maximum.reduceat(t, starts)
    writes = np.maximum.reduceat((kd[rep] > 0).astype(np.int64), starts) > 0
    ends = np.r_[starts[1:], len(key)]
    for g in np.flatnonzero(multi & writes):
        ids = rep[starts[g]:ends[g]]
        for x, i in enumerate(ids):
            for j in ids[x + 1:]:
                if thr[i] == thr[j] or kd[i] == 0 and kd[j] == 0 or kd[i] == 2 and kd[j] == 2:
                    continue
                if warp_sync and blk[i] == blk[j] and (thr[i] % tpb) // 32 == (thr[j] % tpb) // 32:
                    continue
                if blk[i] != blk[j] and not sh[i] or blk[i] == blk[j] and ep[i] == ep[j]:
                    return True
    return False


# ---- the run -------------------------------------------------------------------------------------------

def run_mutant(m: Mutant, rnd, n_shapes, timeout_ms, budget_ms, prove=True):
    from kreg.checker.prover.prove import prove_variant
    s = m.subject
    try:
        module = P.parse(m.ptx)
    except P.ParseError:
        return m
    for dims in shapes(s.op, s.variant, rnd, n_shapes):
        got = emulate(s.variant, s.op, module, dims, rnd)
        if got is None:
            continue
        m.ran += 1
        for p in got:
            m.violations.setdefault(p, []).append(dims)
    if prove:
        res = prove_variant(s.variant, s.op, m.ptx, timeout_ms=timeout_ms, budget_ms=budget_ms)
        m.verdicts = {p: (v.status, v.scope, v.reason) for p, v in res.items()}
    return m


def unsound(m: Mutant) -> list[str]:
    """Properties the prover proved although the emulator saw them violated at dims the proof covers."""
    out = []
    for p, dims in m.violations.items():
        st, scope, _ = m.verdicts.get(p, ("unknown", None, None))
        if st != "proven":
            continue
        if scope == "all-dims" or any(scope and scope.startswith("cases:") and
                                      any(m.subject.op.cases.get(c) == d for c in scope[6:].split(","))
                                      for d in dims):
            out.append(p)
    return out


def generate(seed, per_kernel, only=None):
    """Up to per_kernel mutants per subject, spread over the mutation kinds, deterministic in seed."""
    rnd = random.Random(seed)
    out = []
    for s in subjects():
        if only and only not in s.name:
            continue
        by = {}
        seen = set()
        for kind, what, text in mutations(s):
            if text != s.ptx and text not in seen:
                seen.add(text)
                by.setdefault(kind, []).append(Mutant(s, kind, what, text))
        pick = []
        kinds = sorted(by)
        rnd.shuffle(kinds)
        for ms in by.values():
            rnd.shuffle(ms)
        while len(pick) < per_kernel and any(by.values()):
            for kd in kinds:
                if by[kd] and len(pick) < per_kernel:
                    pick.append(by[kd].pop())
        out += pick
    return out
