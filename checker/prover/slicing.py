"""Cone of influence: which of a launch's constraints an integer query is built from. The launch's own
constraints (dims, requirements, geometry, buffers, thread indices: the core) are always kept; of the facts
symbolic execution added (loop summaries, bounds of fresh values, ballots, tickets, async epochs) a query keeps
those that share a fresh symbol (one the core does not mention) with its goal, transitively, and those that
mention no fresh symbol at all (they constrain the core's symbols). Dropping hypotheses
only weakens a query, so its unsat stays an unsat of the whole (sound); a fact it drops constrains only fresh
symbols the goal does not reach (through the core's symbols at most), so the slice is unsat as often as the whole
in practice, at a fraction of the preprocessing. A slice is a subsequence of the launch's constraints (their
order kept), so the same launch and goal give the same query text in any process."""
from __future__ import annotations

import z3


class Cone:
    """The launch's constraints, `core` (kept in every query) then `facts`; `of(f)` the slice for goal f."""

    def __init__(self, core, facts):
        self.core, self.facts = list(core), list(facts)
        self._syms: dict[int, frozenset] = {}
        self._held: list = []           # every term whose id is a key of _syms (a freed term's id is reused)
        shared = set()
        for c in self.core:
            shared |= self.symbols(c)
        self.shared = frozenset(shared)
        self.fresh = [self.symbols(c) - self.shared for c in self.facts]
        self.always = [i for i, syms in enumerate(self.fresh) if not syms]   # on the core's symbols alone
        self.by_sym: dict[str, list[int]] = {}
        for i, syms in enumerate(self.fresh):
            for s in syms:
                self.by_sym.setdefault(s, []).append(i)

    def symbols(self, e) -> frozenset:
        """The names of the uninterpreted constants and functions e mentions (memoised by term id)."""
        got = self._syms.get(e.get_id())
        if got is not None:
            return got
        stack = [(e, False)]            # post-order without recursion (deep terms): children first
        while stack:
            t, ready = stack.pop()
            i = t.get_id()
            if i in self._syms:
                continue
            kids = t.children()
            if not ready:
                stack.append((t, True))
                stack.extend((c, False) for c in kids if c.get_id() not in self._syms)
                continue
            s = {t.decl().name()} if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED else set()
            for c in kids:
                s |= self._syms[c.get_id()]
            self._syms[i] = frozenset(s)
            self._held.append(t)
        return self._syms[e.get_id()]

    def of(self, f) -> list[int]:
        """The indices (ascending) of the facts in the cone of f."""
        todo = list(self.symbols(f) - self.shared)
        seen, kept = set(todo), set(self.always)
        while todo:
            for i in self.by_sym.get(todo.pop(), ()):
                if i in kept:
                    continue
                kept.add(i)
                for s in self.fresh[i] - seen:
                    seen.add(s)
                    todo.append(s)
        return sorted(kept)

    def slice(self, f) -> list:
        """The core and the facts in the cone of f, in the launch's order."""
        return [*self.core, *(self.facts[i] for i in self.of(f))]
