"""Shape classes: ranges of an op's dims within which a profile chooses one variant from the timings of the
named cases that fall in the range, so that dims no named case has (a prefill of 2048 tokens through a
model whose N and K no case names) still run the variant timed fastest in their class, not the op's
default. The classes cut the token count T (ops with a T dim): decode-sized T <= 16, 16 < T <= 512, and
prefill-sized T > 512. A class choice needs a comparison: the default and the class's fastest were both
timed at the class's named cases compared; it is taken only where its geometric mean there is less. An
exact named case's own choice (profiles.py by_case) comes first, the class's next, the default last."""
from __future__ import annotations

import math
from dataclasses import dataclass

T_CLASSES = ((1, 16), (17, 512), (513, None))      # inclusive ranges of T; None: no upper bound


@dataclass(frozen=True)
class ShapeClass:
    bounds: tuple[tuple[str, int, int | None], ...]     # (dim, lo, hi) inclusive; hi None: unbounded

    @property
    def name(self) -> str:
        def one(d, lo, hi):
            if hi is None:
                return f"{d} > {lo - 1}" if lo > 1 else f"{d} >= {lo}"
            return f"{d} <= {hi}" if lo <= 1 else f"{lo - 1} < {d} <= {hi}"
        return ", ".join(one(*b) for b in self.bounds)

    def contains(self, dims: dict) -> bool:
        return all(d in dims and dims[d] >= lo and (hi is None or dims[d] <= hi) for d, lo, hi in self.bounds)

    def to_json(self) -> dict:
        return {"name": self.name, "bounds": [{"dim": d, "min": lo, "max": hi} for d, lo, hi in self.bounds]}


def classes(op_dims: dict) -> list[ShapeClass]:
    """The shape classes of an op with these dims (its `dims` ranges): by T where it has one, else none."""
    if "T" not in op_dims:
        return []
    lo, hi = op_dims["T"]
    return [ShapeClass((("T", a, b),)) for a, b in T_CLASSES if (b is None or b >= lo) and a <= hi]


@dataclass
class ClassChoice:
    """The variant that runs for dims of one shape class (no named case at exactly them) instead of the
    op's default."""
    shape_class: ShapeClass
    cases: tuple[str, ...]                # the named cases of the class, all timed for both
    variant: str
    hash: str
    ptx_sha256: str
    us: float                             # its geometric mean over the cases
    default_us: float                     # the default's

    @property
    def why(self) -> str:
        return (f"geometric mean {self.us:.2f} us over the {len(self.cases)} named case(s) with "
                f"{self.shape_class.name} vs {self.default_us:.2f} us for the default")

    def to_json(self) -> dict:
        return {"class": self.shape_class.to_json(), "cases": list(self.cases), "variant": self.variant,
                "hash": self.hash, "ptx_sha256": self.ptx_sha256, "us": self.us, "default_us": self.default_us,
                "why": self.why}


def _gmean(times: dict, cases) -> float:
    return math.exp(sum(math.log(times[c]) for c in cases) / len(cases))


def by_class(op_dims: dict, cases: dict[str, dict], timed: list[tuple], default_hash: str) -> dict[str, ClassChoice]:
    """Per shape class of the op, the candidate with the least geometric mean time over the class's named
    cases where that is not the default. timed: (entry, ptx_sha256, {case name: us}) of each qualifying
    candidate. The candidates timed at some case of the class compete over the cases of the class all of
    them were timed at (as the default choice ranks: never a mix of cases); the default must be one."""
    out = {}
    for sc in classes(op_dims):
        names = {n for n, d in cases.items() if sc.contains(d)}
        comp = [(e, ptx, ts) for e, ptx, ts in timed if names & set(ts)]
        common = sorted(set.intersection(*(names & set(ts) for _, _, ts in comp))) if comp else []
        base = next((x for x in comp if x[0].hash == default_hash), None)
        if base is None or not common:
            continue
        e, ptx, ts = min(comp, key=lambda x: (_gmean(x[2], common), x[0].name))
        us, default_us = _gmean(ts, common), _gmean(base[2], common)
        if e.hash != default_hash and us < default_us:
            out[sc.name] = ClassChoice(sc, tuple(common), e.name, e.hash, ptx, us, default_us)
    return out
