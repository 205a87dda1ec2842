"""The control-flow structure of a parsed PTX kernel: dominators and natural loops, exit-aware immediate
post-dominators, which instructions synchronise (block barriers, warpgroup collectives, full-mask warp
syncs) and which branches may reach one before reconverging."""
from __future__ import annotations

from dataclasses import dataclass, field

from kreg.checker.ptx import parse as P


class IrreducibleFlow(Exception):
    """A cycle in the CFG that no back edge closes (no natural loop describes it)."""


@dataclass
class Loop:
    header: int
    body: set
    latches: list
    back: list = field(default_factory=list)
    exits: list = field(default_factory=list)


def dominators(k: P.Kernel) -> list[set]:
    n = len(k.blocks)
    allb = set(range(n))
    dom = [allb.copy() for _ in range(n)]
    if n:
        dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for b in range(1, n):
            preds = k.blocks[b].preds
            new = set.intersection(*[dom[p] for p in preds]) if preds else set()
            new = new | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


def find_loops(k: P.Kernel) -> dict[int, Loop]:
    dom = dominators(k)
    k._dom = dom
    loops: dict[int, Loop] = {}
    for b in k.blocks:
        for s in b.succs:
            if s in dom[b.id]:
                L = loops.setdefault(s, Loop(s, {s}, []))
                L.latches.append(b.id)
                todo = [b.id]
                while todo:
                    x = todo.pop()
                    if x in L.body:
                        continue
                    L.body.add(x)
                    todo += k.blocks[x].preds
    # irreducible control flow: a cycle not closed by a back edge
    color = {}

    def dfs(u):
        stack = [(u, iter(k.blocks[u].succs))]
        color[u] = 1
        while stack:
            x, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[x] = 2
                stack.pop()
            elif color.get(nxt) == 1 and nxt not in dom[x]:
                raise IrreducibleFlow("irreducible control flow")
            elif nxt not in color:
                color[nxt] = 1
                stack.append((nxt, iter(k.blocks[nxt].succs)))
    if k.blocks:
        dfs(0)
    return loops


def exit_ipdom(k: P.Kernel) -> list[int]:
    """Immediate post-dominators where a predicated ret/exit also leads to the kernel's exit. The
    CFG (shared with the emulator) gives such a block only its fall-through edge, so its own ipdom
    and those of branches around it would hide the threads that leave there from the barrier
    divergence check."""
    early = frozenset(b.id for b in k.blocks
                      if k.instrs[b.end - 1].op in ("ret", "exit") and k.instrs[b.end - 1].pred is not None)
    return P._post_dominators(k, early)


def is_block_barrier(ins: P.Instr) -> bool:
    return ins.op in ("bar", "barrier") and "warp" not in ins.mods


def is_block_collective(ins: P.Instr) -> bool:
    """A block barrier or a warpgroup instruction (wgmma .sync.aligned: every thread of the warpgroup must
    execute it; checked as block-uniform control flow, like a barrier)."""
    return is_block_barrier(ins) or ins.op == "wgmma"


def is_warp_sync(ins: P.Instr) -> bool:
    """bar.warp.sync with the full member mask (0xffffffff): the only form given an ordering."""
    if ins.op != "bar" or "warp" not in ins.mods or len(ins.args) != 1:
        return False
    m = ins.args[0]
    return isinstance(m, P.Imm) and not m.is_float and int(m.value) & 0xffffffff == 0xffffffff


def sync_branches(k: P.Kernel, ipdom: list[int], is_sync=is_block_barrier) -> set[int]:
    """Blocks ending in a conditional branch or a predicated ret/exit from which a synchronisation
    (is_sync) is reachable before the branch's immediate post-dominator (exit-aware, see exit_ipdom:
    for a predicated ret/exit that is the kernel's exit, so every sync after it counts)."""
    has_sync = {b.id for b in k.blocks if any(is_sync(k.instrs[i]) for i in range(b.start, b.end))}
    out = set()
    if not has_sync:
        return out
    for b in k.blocks:
        last = k.instrs[b.end - 1]
        if last.pred is None or last.op not in ("bra", "ret", "exit"):
            continue
        stop = ipdom[b.id]
        seen, todo = set(), list(b.succs)
        while todo:
            x = todo.pop()
            if x == stop or x in seen:
                continue
            seen.add(x)
            todo += k.blocks[x].succs
        if seen & has_sync:
            out.add(b.id)
    return out
