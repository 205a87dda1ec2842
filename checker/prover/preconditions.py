"""Preconditions, not just verdicts: for a variant whose proof leaves a property refuted or unknown, the weakest
simple condition over the dims and the launch under which the prover proves all four properties for all dims.
Candidates, in a fixed order from weaker to stronger: divisibility (`D % k == 0`), bounds against a launch
extent (`D >= block`, `D <= block`, `N <= grid * block`), powers of two, equality with a launch extent
(`block == D`); then pairs of those. Each is checked by proving the variant again under the op's requirements
and the candidate (never guessed); a candidate that holds at the dims of a refutation's witness cannot help and
is never tried, nor one no named case satisfies (conformance could test nothing). At most MAX_PROOFS proofs."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations

from kreg.registry.expr import Expr, ExprError, parse_condition
from kreg.registry.results import PROPS
from kreg.registry.schema import Op, Variant

DIVISORS = (2, 4, 8, 16, 32)
MAX_PROOFS = 12          # proofs a search may run, candidates and pairs together (3x as many candidates tried)
POW2_TERMS = 24          # a dim whose range holds more powers of two gets no power-of-two candidate
AXES = "xyz"


@dataclass(frozen=True)
class Candidate:
    requires: tuple[str, ...]      # conditions over the dims, as an op's `requires:` holds them
    says: tuple[str, ...]          # the same for people ("blockDim.x == D")
    rank: int                      # lower is weaker (tried first)

    def exprs(self) -> list[Expr]:
        return [parse_condition(t) for t in self.requires]

    def holds(self, dims: dict) -> bool:
        try:
            return all(e(dims) for e in self.exprs())
        except ExprError:
            return False


@dataclass
class Search:
    """What a search found: `found` the proven candidate (None if none), `tried` each candidate proved and how
    it came out, `skipped_cases` the op's named cases that violate the found condition."""
    found: Candidate | None = None
    tried: list[tuple[str, str]] = field(default_factory=list)
    skipped_cases: list[str] = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"found": self.found is not None,
                "requires": list(self.found.requires) if self.found else [],
                "says": " and ".join(self.found.says) if self.found else None,
                "skipped_cases": self.skipped_cases,
                "tried": [{"condition": c, "outcome": o} for c, o in self.tried]}


def _paren(text: str) -> str:
    t = text.strip()
    return t if t.isidentifier() or t.lstrip("-").isdigit() else f"({t})"


def candidates(variant: Variant, op: Op) -> list[Candidate]:
    """The single candidates in the order they are tried (deduplicated; each satisfiable at some named case)."""
    free = [d for d, (lo, hi) in op.dims.items() if lo < hi]
    out: list[Candidate] = []
    for k in DIVISORS:
        for d in free:
            out.append(Candidate((f"{d} % {k} == 0",), (f"{d} % {k} == 0",), 10 + k.bit_length()))
    extents = []
    for n, ln in enumerate(variant.launches):
        tag = f"launch {n + 1} " if len(variant.launches) > 1 else ""
        for i, e in enumerate(ln.block):
            extents.append((e.text, f"{tag}blockDim.{AXES[i]}"))
        for i, (g, b) in enumerate(zip(ln.grid, ln.block)):
            extents.append((f"{_paren(g.text)} * {_paren(b.text)}", f"{tag}gridDim.{AXES[i]} * blockDim.{AXES[i]}"))
    for rel, rank in ((">=", 20), ("<=", 21)):
        for text, who in extents:
            for d in free:
                if text.strip() != d:
                    out.append(Candidate((f"{d} {rel} {_paren(text)}",), (f"{d} {rel} {who}",), rank))
    for d in free:
        lo, hi = op.dims[d]
        pows = [1 << j for j in range(hi.bit_length()) if lo <= 1 << j <= hi]
        if 1 <= len(pows) <= POW2_TERMS:
            out.append(Candidate((" or ".join(f"{d} == {p}" for p in pows),), (f"{d} is a power of two",), 30))
    for text, who in extents:
        if "*" in who:
            continue
        for d in free:
            if text.strip() != d:
                out.append(Candidate((f"{d} == {_paren(text)}",), (f"{who} == {d}",), 40))
    seen, keep = set(), []
    for c in sorted(out, key=lambda c: c.rank):      # stable: the order above within a rank
        try:
            ok = c.exprs() and any(c.holds(case) for case in op.cases.values())
        except ExprError:
            ok = False
        if ok and c.requires not in seen and not _implied(variant, op, c):
            seen.add(c.requires)
            keep.append(c)
    return keep


def _implied(variant: Variant, op: Op, c: Candidate) -> bool:
    """The op's ranges and requirements imply c already (D <= M * 128 where the grid is M and D <= M): no
    precondition at all. Decided in solver units (deterministic); not decided counts as not implied."""
    import z3
    from kreg.checker.prover.env import LaunchEnv
    from kreg.checker.prover.state import Unsupported
    try:
        env = LaunchEnv(variant, op, None, variant.launches[0])
        f = z3.And(*[env.cond(e.tree) for e in c.exprs()])
    except (Unsupported, ExprError, KeyError, z3.Z3Exception):
        return False
    s = z3.SolverFor("QF_BV")
    s.set("rlimit", 2_000_000)
    s.add(*env.constraints)
    s.add(z3.Not(f))
    return s.check() == z3.unsat


def _same_dim_divisibility(a: Candidate, b: Candidate) -> bool:
    return a.rank < 20 and b.rank < 20 and a.requires[0].split()[0] == b.requires[0].split()[0]


def pairs(singles: list[Candidate]) -> list[Candidate]:
    """Two singles together, weakest sums first (in a fixed order)."""
    out = [Candidate(a.requires + b.requires, a.says + b.says, a.rank + b.rank)
           for a, b in combinations(singles, 2) if not _same_dim_divisibility(a, b)]
    return sorted(out, key=lambda c: c.rank)


def under(op: Op, c: Candidate) -> Op:
    """The op with the candidate conjoined to its requirements, and the named cases that satisfy it."""
    return replace(op, requires=op.requires + tuple(c.exprs()),
                   cases={n: d for n, d in op.cases.items() if c.holds(d)})


SMALL_SHAPES = 8          # shapes the emulator runs a candidate at before it is proved


def _run_small(variant: Variant, op: Op, module, props: set) -> dict | None:
    """The dims of a concrete violation of one of props that the emulator shows at the first SMALL_SHAPES of
    the bounded search's shapes under op (checker/emulator/search.py), or None: a candidate seen violated
    needs no proof (and its dims rule out the candidates that hold there)."""
    from kreg.checker.emulator.search import run_at, shapes
    for dims in shapes(op, variant, SMALL_SHAPES):
        try:
            if run_at(variant, op, module, dims, "low", props):
                return dims
        except Exception:        # an emulator problem decides nothing
            continue
    return None


def _witness_dims(verdicts: dict) -> list[dict]:
    return [v.witness["dims"] for v in verdicts.values()
            if v.status == "refuted" and isinstance(v.witness, dict) and isinstance(v.witness.get("dims"), dict)]


def search(variant: Variant, op: Op, ptx: str, verdicts: dict, prove, max_proofs: int = MAX_PROOFS) -> Search:
    """The weakest candidate (singles, then pairs) under which prove(variant, op', ptx) -> {prop: Verdict}
    proves all four properties for all dims. verdicts: the proof without one (its refutations' witnesses
    rule out the candidates that hold there)."""
    res = Search()
    if all(v.proven_for_all_dims for v in verdicts.values()):
        return res
    against = _witness_dims(verdicts)
    singles = candidates(variant, op)
    useful = [c for c in singles if not any(c.holds(w) for w in against)]
    props = {p for p, v in verdicts.items() if not (v.proven_for_all_dims)}
    module = None
    proofs = 0
    for c in useful + pairs(useful):
        if proofs >= max_proofs or len(res.tried) >= 3 * max_proofs:
            break
        if any(c.holds(w) for w in against):
            continue
        if module is None:
            from kreg.checker.ptx import parse as P
            module = P.parse(ptx)
        seen = _run_small(variant, under(op, c), module, props)
        if seen is not None:          # a concrete violation under the candidate: no proof needed
            res.tried.append((" and ".join(c.requires), f"violated at {seen}"))
            against.append(seen)
            continue
        proofs += 1
        got = prove(variant, under(op, c), ptx)
        open_ = [p for p in PROPS if not (got[p].proven_for_all_dims)]
        res.tried.append((" and ".join(c.requires), "proven" if not open_ else
                          ", ".join(f"{p} {got[p].status}" for p in open_)))
        if not open_:
            res.found, res.verdicts = c, got
            res.skipped_cases = [n for n, d in op.cases.items() if not c.holds(d)]
            return res
        against += _witness_dims(got)
    return res
