"""Cone of influence: which of a launch's constraints an integer query is built from. The launch's own
constraints (dims, requirements, geometry, buffers, thread indices: the core) are always kept; of the facts
symbolic execution added (loop summaries, bounds of fresh values, ballots, tickets, async epochs) a query keeps
those that share a fresh symbol (one the core does not mention) with its goal, transitively, and those that
mention no fresh symbol at all (they constrain the core's symbols). Dropping hypotheses
only weakens a query, so its unsat stays an unsat of the whole (sound); a fact it drops constrains only fresh
symbols the goal does not reach (through the core's symbols at most), so the slice is unsat as often as the whole
in practice, at a fraction of the preprocessing. A slice is a subsequence of the launch's constraints (their
order kept), so the same launch and goal give the same query text in any process. The same split of symbols
weakens a query that did not close for a second look (weakenings)."""
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


def weakenings(f, cone: Cone, most: int = 6) -> list:
    """Weaker forms of query f for a second look: f with the atoms (what And / Or, never Not, are made of) that
    mention a fresh symbol (one the launch's core does not) replaced by True, except, in the k-th form, those
    of the k-th set of fresh symbols that atoms connect (first-seen order; the first form keeps none of them;
    at most `most` sets). Each form is implied by f (an atom in a positive position made True), so its unsat is
    f's: a path condition keeps what loops and branches far from the access say, and a solver that drowns in
    them closes the access's own question at once. Forms equal to f are left out."""
    atoms, order, seen, todo = [], {}, set(), [f]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_and(t) or z3.is_or(t):
            todo.extend(reversed(t.children()))
        else:
            atoms.append(t)
    parent: dict[str, str] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    fresh = {a.get_id(): sorted(cone.symbols(a) - cone.shared) for a in atoms}
    for a in atoms:
        syms = fresh[a.get_id()]
        for s in syms:
            order.setdefault(s, len(order))
            parent[find(s)] = find(syms[0])
    if not order:
        return []
    roots = list(dict.fromkeys(find(s) for s in sorted(order, key=order.get)))
    out = []
    for keep in [None, *roots[:most]]:
        kept = {a.get_id() for a in atoms if not fresh[a.get_id()] or keep is not None
                and find(fresh[a.get_id()][0]) == keep}
        if len(kept) == len(atoms):
            continue
        out.append(_rebuild(f, kept))
    return out


def _rebuild(f, kept: set):
    """f with every atom whose id is not in kept replaced by True (And / Or rebuilt bottom-up, without recursion)."""
    done: dict[int, object] = {}
    stack = [(f, False)]
    while stack:
        t, ready = stack.pop()
        i = t.get_id()
        if i in done:
            continue
        if not (z3.is_and(t) or z3.is_or(t)):
            done[i] = t if i in kept else z3.BoolVal(True, t.ctx)
            continue
        if not ready:
            stack.append((t, True))
            stack.extend((c, False) for c in t.children() if c.get_id() not in done)
            continue
        kids = [done[c.get_id()] for c in t.children()]
        done[i] = z3.And(*kids) if z3.is_and(t) else z3.Or(*kids)
    return done[f.get_id()]
