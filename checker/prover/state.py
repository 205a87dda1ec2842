"""The data of symbolic execution: buffers, memory accesses, branch checks, one thread's state and trace,
and the bitvector helpers every part of the prover uses."""
from __future__ import annotations

from dataclasses import dataclass, field

import z3

from kreg.checker.ptx import parse as P

INT_TYPES = {t for t in P.TYPES if t[0] in "usb" and t != "bf16" and t != "bf16x2"}
SIGNED = {"s8", "s16", "s32", "s64"}


class Unsupported(Exception):
    """The kernel uses something the prover does not model soundly: every property becomes unknown."""


@dataclass
class Buffer:
    name: str
    kind: str            # "param" | "scratch" | "shared" | "global-var" | "const" | "local"
    role: str | None     # op role for params ("in", "out", "inout"), "scratch", or None
    size: z3.ExprRef     # bytes, a wide bitvector over dims
    base: z3.ExprRef     # its (symbolic) base address, 64-bit (32-bit windows zero-extended)
    elem_bits: int = 0
    values: tuple | None = None   # (lo, hi) wide bitvectors for loaded values (value preconditions)
    signed: bool = True
    dynamic: bool = False         # extern dynamic shared memory: every such variable is the same memory


@dataclass
class Access:
    instr: P.Instr
    kind: str            # "read" | "write" | "atomic"
    buffer: str | None   # None: provenance unknown
    addr: z3.ExprRef     # 64-bit address
    width: int           # bytes
    pc: z3.BoolRef
    epoch: z3.ExprRef
    wepoch: z3.ExprRef = None     # full-mask bar.warp.sync executed so far
    aseq: z3.ExprRef = None       # cp.async issues and waits executed so far (program order among them)
    loop_ks: tuple = ()           # the iteration counts of the loops around it
    # an asynchronous copy's shared write (cp.async) may land at any point from its issue (epoch, aseq)
    # until the wait that completes it (end, aseq_end): fresh symbols, fixed where the wait is known
    end: z3.ExprRef = None
    aseq_end: z3.ExprRef = None
    # a wgmma's shared read (async proxy) is pending the same way, from its issue to the wgmma.wait_group
    # that retires it; a generic write (st, atom, cp.async) is visible to the async proxy from the epoch of
    # the writing thread's first fence.proxy.async after it has landed: vis, a fresh symbol bounded there
    async_read: bool = False
    vis: z3.ExprRef = None
    space: str | None = None      # the state space where the instruction names none (wgmma: shared)
    noncoherent: bool = False     # ld.global.nc / ldu: valid only for memory no thread writes during the launch


@dataclass
class BranchCheck:
    instr: P.Instr
    pc: z3.BoolRef
    cond: z3.BoolRef
    epoch: z3.ExprRef
    loop_ks: tuple
    wepoch: z3.ExprRef = None
    block: bool = True            # a block barrier may follow before reconvergence
    warp: bool = False            # a bar.warp.sync may follow before reconvergence


@dataclass
class State:
    regs: dict
    tags: dict
    pc: z3.BoolRef
    epoch: z3.ExprRef
    loop_ks: tuple = ()
    wepoch: z3.ExprRef = None
    aseq: z3.ExprRef = None
    pending: tuple = ()           # (Access of a cp.async shared write, commit groups closed since its issue,
                                  #  the condition under which it is still pending on this state's paths)
    wpending: tuple = ()          # the same for wgmma shared reads (wgmma commit groups)
    unfenced: tuple = ()          # (Access of a generic write, 0, condition): no fence.proxy.async since it landed

    def copy(self, pc=None):
        return State(dict(self.regs), dict(self.tags), self.pc if pc is None else pc, self.epoch, self.loop_ks,
                     self.wepoch, self.aseq, self.pending, self.wpending, self.unfenced)


@dataclass
class Trace:
    """What one symbolic thread does."""
    accesses: list = field(default_factory=list)
    branches: list = field(default_factory=list)
    obligations: list = field(default_factory=list)   # (formula that must be unsat, reason)
    defs: list = field(default_factory=list)          # definitional constraints on fresh symbols
    approx: set = field(default_factory=set)          # names of over-approximated (havoc) symbols
    collectives: list = field(default_factory=list)   # (instr, pc, loop_ks, epoch, operands): wgmma issues
    notes: list = field(default_factory=list)
    ballots: list = field(default_factory=list)       # (instr index, value): full-mask ballots, one per warp
    tickets: list = field(default_factory=list)       # (index, value, pc, buffer, address, increment, width)
    popcs: list = field(default_factory=list)         # (instr index, operand, 7-bit count): popc results


def bv(v, w):
    return z3.BitVecVal(v % (1 << w), w)


def fit(e, w, signed=False):
    """Coerce a bitvector to width w (truncate or extend)."""
    if z3.is_bool(e):
        e = z3.If(e, bv(1, w), bv(0, w))
    n = e.size()
    if n == w:
        return e
    if n > w:
        return z3.Extract(w - 1, 0, e)
    return z3.SignExt(w - n, e) if signed else z3.ZeroExt(w - n, e)


def merge_pending(states):
    """The copies pending on any of the merged paths ([(path condition, pending)] per state): each still
    pending where one of the states that carry it was (a state that completed it, or never issued it,
    adds nothing), counting the fewest commit groups closed since its issue among those states."""
    out: dict[int, list] = {}
    for pc, lst in states:
        for a, n, cond in lst:
            e = out.setdefault(id(a), [a, n, [], []])
            e[1] = min(e[1], n)
            e[2].append(cond)
            e[3].append(pc)
    res = []
    for a, n, conds, pcs in out.values():
        if len(pcs) == len(states) and all(c is conds[0] or c.eq(conds[0]) for c in conds):
            res.append((a, n, conds[0]))     # pending on every merged path: the merged pc says the rest
        else:
            res.append((a, n, z3.Or(*[z3.And(c, p) for c, p in zip(conds, pcs)])))
    return tuple(res)
