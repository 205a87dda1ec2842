"""What the prover does not model, read off the PTX: for a verdict left `unknown`, the constructs of the
kernel that are out of its reach, named so that a user knows what to change (a flag polled by one thread
and set by another, the values an atomic hands out, positions from ballot masks, a loop bound or an index
read from memory that no `values` range bounds, a loop unrolled after a remainder loop, a cp.async wait that a
loop does not reach every iteration)."""
from __future__ import annotations

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.cfg import IrreducibleFlow, dominators, find_loops
from kreg.checker.prover.loops import remainder_factors

SYNC_MODS = ("volatile", "relaxed", "acquire", "release")


def _regs(args) -> list[str]:
    out = []
    for a in args:
        if isinstance(a, P.Reg):
            out.append(a.name)
        elif hasattr(a, "items"):
            out += _regs(a.items)
        elif hasattr(a, "base") and isinstance(getattr(a, "base"), P.Reg):
            out.append(a.base.name)
    return out


def _loaded_from_memory(k: P.Kernel) -> set[str]:
    """Registers whose value depends on a load from global or shared memory (not a param), to a fixed point."""
    taint: set[str] = set()
    while True:
        n = len(taint)
        for ins in k.instrs:
            if not ins.args or ins.op in ("st", "red", "bra", "bar", "cp", "mma", "wgmma"):
                continue
            dst = _regs(ins.args[:1])
            if ins.op in ("ld", "atom") and not ins.has("param", "const"):
                taint.update(dst)
            elif set(_regs(ins.args[1:])) & taint:
                taint.update(dst)
        if len(taint) == n:
            return taint


def _back_edge_preds(k: P.Kernel) -> set[str]:
    out = set()
    for ins in k.instrs:
        if ins.op == "bra" and ins.pred is not None and k.labels.get(ins.args[0].name, 1 << 30) <= ins.index:
            out.add(ins.pred.name)
    return out


def _loop_instrs(k: P.Kernel, loop) -> list[P.Instr]:
    return [k.instrs[i] for b in sorted(loop.body) for i in range(k.blocks[b].start, k.blocks[b].end)]


def _unrolled(k: P.Kernel, loops) -> bool:
    """A loop with two or more accesses off one pointer register at different offsets (an unrolled body) in a
    kernel that also has a remainder loop (loops.remainder_factors)."""
    if not remainder_factors(k, loops):
        return False
    for L in loops.values():
        offs: dict[str, set] = {}
        for i in _loop_instrs(k, L):
            if i.op in ("ld", "st", "cp") and i.space != "param":
                for a in i.args:
                    if isinstance(a, P.Addr) and isinstance(a.base, P.Reg):
                        offs.setdefault(a.base.name, set()).add(a.offset)
        if any(len(v) > 1 for v in offs.values()):
            return True
    return False


def _conditional_wait(k: P.Kernel, loops) -> bool:
    """A cp.async.wait_group inside a loop, in a block that does not dominate every latch of the loop (the
    loop can go round without it, e.g. `if (c > 0) wait`)."""
    dom = dominators(k) if loops else []
    for L in loops.values():
        for b in sorted(L.body):
            blk = k.blocks[b]
            if any(k.instrs[i].op == "cp" and k.instrs[i].has("wait_group", "wait_all")
                   for i in range(blk.start, blk.end)) and not all(b in dom[x] for x in L.latches):
                return True
    return False


def polls_flags(module: P.Module, variant) -> bool:
    """Whether a kernel of the variant loads with volatile / relaxed / acquire semantics (a flag hand-off)."""
    for entry in dict.fromkeys(ln.entry for ln in variant.launches):
        try:
            k = module.kernel(entry)
        except Exception:
            continue
        if any(i.op == "ld" and i.has(*SYNC_MODS) for i in k.instrs):
            return True
    return False


def unmodelled(module: P.Module, variant) -> list[str]:
    """One phrase per unmodelled construct found in the variant's kernels ("... is not modelled")."""
    out: list[str] = []
    for entry in dict.fromkeys(ln.entry for ln in variant.launches):
        try:
            k = module.kernel(entry)
        except Exception:
            continue
        ops = {i.op for i in k.instrs}
        if any(i.op == "ld" and i.has(*SYNC_MODS) for i in k.instrs):
            out.append("a volatile / acquire flag hand-off between threads (one polls what another sets) is not "
                       "modelled: order with a barrier (__syncthreads, __syncwarp) instead")
        used = {r for i in k.instrs for r in _regs(i.args[1:] if i.op not in ("st", "red") else i.args)}
        if any(i.op == "atom" and set(_regs(i.args[:1])) & used for i in k.instrs):
            out.append("the values an atomic returns are modelled only as tickets (distinct, below init + step x "
                       "threads) of an atom.add of a constant outside loops, on a counter with a `values` range that no "
                       "other access touches, taken by threads a bound such as `i < n` counts: else an address or "
                       "bound computed from them is arbitrary to the prover")
        if "vote" in ops and "popc" in ops:
            out.append("positions computed from ballot masks (popc of a vote.ballot) are modelled only for a full-mask "
                       "ballot that every thread reaches once, outside loops and early exits")
        taint = _loaded_from_memory(k)
        loop_preds = _back_edge_preds(k)
        if any(i.op == "setp" and _regs(i.args[:1])[0] in loop_preds and set(_regs(i.args[1:])) & taint
               for i in k.instrs if i.args):
            out.append("a loop bound read from memory is not modelled beyond its `values` range")
        try:
            loops = find_loops(k)
        except IrreducibleFlow:
            loops = {}
        if _unrolled(k, loops):
            out.append("a loop the compiler unrolled after a remainder loop: the unrolled body's later accesses stay "
                       "in bounds only because the remainder loop leaves a multiple of the unroll factor of "
                       "iterations, which the solver may not settle; `#pragma unroll 1` on the source loop keeps one "
                       "access an iteration")
        if _conditional_wait(k, loops):
            out.append("a cp.async.wait_group that the loop does not reach every iteration (under a condition such "
                       "as `if (c > 0)`) is not modelled: the prover bounds the copies of earlier iterations only by "
                       "waits every iteration executes; wait every iteration (a wait_group N with at most N groups "
                       "pending returns at once) and guard only the use")
    return list(dict.fromkeys(out))
