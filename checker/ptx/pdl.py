"""Whether a kernel may be launched with programmatic dependent launch (PDL): a static check of its PTX.

With PDL the next kernel on a stream may start while its predecessor still runs. That is sound for a
kernel that executes `griddepcontrol.wait` before it touches memory: the wait returns only once every
prerequisite grid has completed and its memory operations are performed and visible to this grid, so
the kernel reads nothing its predecessor is still writing and writes nothing its predecessor still
reads (and by induction nothing of any earlier kernel: a predecessor completes only after its own wait
returned). `griddepcontrol.launch_dependents` only lets the next kernel be scheduled earlier; it has
no memory effect, so the properties the prover shows for one launch are unchanged by either.

The check is the simplest sound form: from the entry, every instruction up to an unpredicated
`griddepcontrol.wait` is a register-only one (param loads, moves, address conversions, arithmetic,
comparisons; no branch, barrier, exit or memory access of any space) or an L2 prefetch. Then the wait
dominates every instruction after it, memory accesses included, on every path. An L2 prefetch
(`prefetch{.global}.L2`) moves no data into the program (no register, no L1 line): it only asks the
L2, the device's point of coherence for global memory, to hold a line, and a later write of the
predecessor updates that line there; so the loads after the wait see the predecessor's writes. A
prefetch to L1 (or `prefetchu`) is refused: the L1 is not coherent. (The emulator and the prover
treat prefetches as no-ops, so a kernel keeps its prefetch addresses inside its buffers itself.)"""
from __future__ import annotations

from kreg.checker.ptx import parse as P

# Register-only opcodes (no memory effect, no control transfer, no inter-thread exchange). `ld` is
# allowed only from the param space; everything not listed (ld/ldu/st/atom/red/cp/ldmatrix/prefetch,
# bar, bra, ret, exit, trap, shfl, vote, mma, ...) ends the prefix.
REGISTER_ONLY = {
    "mov", "cvta", "add", "sub", "mul", "mad", "mul24", "mad24", "mad.wide", "mul.wide", "div", "rem", "abs", "neg",
    "min", "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "shf", "setp", "set", "selp", "slct", "cvt",
    "popc", "clz", "brev", "bfe", "bfi", "bfind", "prmt", "lop3", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2",
    "sin", "cos", "tanh", "copysign", "testp", "sad", "szext", "bmsk", "fns", "dp4a", "dp2a",
}


def _is_l2_prefetch(ins: P.Instr) -> bool:
    return ins.op == "prefetch" and set(ins.mods) - {"global"} in ({"L2"}, {"L2::evict_last"}, {"L2::evict_normal"})


def _is_wait(ins: P.Instr) -> bool:
    return ins.op == "griddepcontrol" and ins.mods == ("wait",) and ins.pred is None


def wait_first_problem(k: P.Kernel) -> str | None:
    """None if griddepcontrol.wait precedes every memory access on every path of kernel k (the form
    above); otherwise why not, naming the first instruction that comes before any wait."""
    if not any(_is_wait(ins) for ins in k.instrs):
        return f"{k.name}: no (unpredicated) griddepcontrol.wait"
    for ins in k.instrs:
        if _is_wait(ins):
            return None
        if ins.op == "griddepcontrol" and ins.mods == ("launch_dependents",) or _is_l2_prefetch(ins):
            continue
        if ins.op == "ld" and ins.space == "param":
            continue
        if ins.op in REGISTER_ONLY:
            continue
        return f"{k.name}: line {ins.line} `{ins}` comes before any griddepcontrol.wait"
    raise AssertionError("unreachable: a wait was found above")


def waits_first(k: P.Kernel) -> bool:
    """Whether kernel k may be launched with the PDL attribute."""
    return wait_first_problem(k) is None
