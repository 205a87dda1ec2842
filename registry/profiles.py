"""Profiles: which variant runs for each op, resolved from the results store for one device kind.
`safe-only` takes only safe variants whose four proofs are `proven` for all dims, for the exact PTX
that was tested, by the current checker version, and whose numerics passed on this device kind (the
numerics of a PTX on a device do not depend on the checker: a new checker's proofs of the same PTX,
made on any device, join the numerics already measured); it
names every op that has none. `fastest` takes the fastest conformant variant (safe or unsafe; a
vendor variant where one is registered). Either profile ranks its qualifying variants by the geometric
mean of their times over the named cases every candidate was timed at (all the op's shapes where `kreg
verify` timed every case), else by the time at the largest case; safe-only without timings prefers by
name. One default choice per op and type binding (bf16 / f16), plus, per named case where another
qualifying variant was timed faster than the default, that variant for launches at exactly the case's
dims (`by_case`: the engine runs a Qwen3-0.6B projection on the variant fastest at that shape), and per
shape class (registry/shape_classes.py: ranges of T) where another was faster over the class's named
cases, that variant for other dims in the class (`by_class`), with why each was chosen and why each
other candidate was not."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .catalog import Catalog, Entry
from .shape_classes import ClassChoice, by_class
from .store import Store
from .trust import StoredVerdict, latest_verdicts, proof, why_not_safe

PROFILES = ("safe-only", "fastest")


@dataclass
class Choice:
    op: str
    types: dict
    variant: str | None = None            # None: no candidate qualifies
    hash: str | None = None
    ptx_sha256: str | None = None
    why: str = ""
    median_us: float | None = None
    passed_over: dict[str, str] = field(default_factory=dict)    # variant name -> why not
    by_case: dict[str, CaseChoice] = field(default_factory=dict)  # named case -> a faster variant there
    by_class: dict[str, ClassChoice] = field(default_factory=dict)  # shape class name -> a faster variant there

    def to_json(self) -> dict:
        return {"op": self.op, "types": self.types, "variant": self.variant, "hash": self.hash,
                "ptx_sha256": self.ptx_sha256, "why": self.why, "median_us": self.median_us,
                "passed_over": self.passed_over, "by_case": {n: c.to_json() for n, c in self.by_case.items()},
                "by_class": {n: c.to_json() for n, c in self.by_class.items()}}


@dataclass
class CaseChoice:
    """The variant that runs at one named case's exact dims instead of the op's default choice."""
    dims: dict
    variant: str
    hash: str
    ptx_sha256: str
    us: float                             # its time at this case (as the profile ranks: engine_us or median_us)
    default_us: float                     # the default choice's time at this case

    @property
    def why(self) -> str:
        return f"{self.us:.2f} us at this case vs {self.default_us:.2f} us for the default"

    def to_json(self) -> dict:
        return {"dims": self.dims, "variant": self.variant, "hash": self.hash, "ptx_sha256": self.ptx_sha256,
                "us": self.us, "default_us": self.default_us, "why": self.why}


@dataclass
class Resolution:
    profile: str
    device: str                           # "cpu" | "gpu"
    device_kinds: list[str]               # the device kinds whose results were read
    checker_version: str
    choices: list[Choice]

    @property
    def missing(self) -> list[Choice]:
        return [c for c in self.choices if c.variant is None]

    def to_json(self) -> dict:
        return {"profile": self.profile, "device": self.device, "device_kinds": self.device_kinds,
                "checker_version": self.checker_version, "complete": not self.missing,
                "missing_ops": sorted({c.op for c in self.missing}),
                "choices": [c.to_json() for c in self.choices]}


def _why_not_conformant(stored: StoredVerdict | None) -> str | None:
    if stored is None:
        return "no complete verify result on this device kind for this exact variant (run `kreg verify`)"
    if stored.report.verdict not in ("safe", "unsafe", "unverified"):      # unverified: a conformant vendor routine
        return f"verdict {stored.report.verdict}"
    return None


def _speed(row: StoredVerdict | None, key: str = "median_us") -> float | None:
    """The time of the case that moves the most bytes (the speed record's own `case`)."""
    return ((row.report.speed if row else None) or {}).get(key)


def _case_times(row: StoredVerdict | None, key: str = "median_us") -> dict[str, float]:
    sp = (row.report.speed if row else None) or {}
    return {n: c[key] for n, c in (sp.get("cases") or {}).items() if c.get(key)}


def _time_key(rows: list[StoredVerdict]) -> str:
    """`engine_us` (each variant timed as the engine runs it: with PDL where all its kernels wait first)
    where every candidate's record has it, else the plain graph time `median_us` for all: never a mix."""
    has = lambda r: (_speed(r, "engine_us") is not None
                     and all(c.get("engine_us") for c in ((r.report.speed.get("cases") or {}).values())))
    return "engine_us" if all(has(r) for r in rows) else "median_us"


def _common_and_every(rows: list[StoredVerdict], key: str) -> tuple[set, set]:
    """The named cases all these rows were timed at, and those any of them was."""
    sets = [set(_case_times(r, key)) for r in rows]
    return set.intersection(*sets), set.union(*sets)


def _fastest(timed: list[tuple], key: str) -> tuple[tuple, str]:
    """The fastest (time, entry, row) and the basis of the ranking: the least geometric mean of times over
    the named cases all were timed at, when there are several (one shape class must not decide for all: a
    kernel fastest at the largest case may be slowest at a model's own shapes), else the least time at the
    largest case. The basis names the cases left out because only some candidates were timed there (a
    `kreg verify --max-case-mb` run, say): `kreg verify --speed-cases all` of every candidate closes it."""
    common, every = _common_and_every([r for _, _, r in timed], key)
    how = " as the engine runs it" if key == "engine_us" else ""
    if every - common:
        how += (f"; {len(every - common)} named case(s) left out, timed for only some candidates: "
                + ", ".join(sorted(every - common)[:4]) + (", .." if len(every - common) > 4 else ""))
    if len(common) > 1:
        def gmean(row):
            ts = _case_times(row, key)
            return math.exp(sum(math.log(ts[c]) for c in common) / len(common))
        best = min(timed, key=lambda x: gmean(x[2]))
        return best, f"geometric mean {gmean(best[2]):.1f} us over {len(common)} named cases{how}"
    best = min(timed, key=lambda x: _speed(x[2], key))
    return best, f"{_speed(best[2], key):.1f} us at its largest case{how}"


def _by_case(cases: dict[str, dict], timed: list[tuple], default: Entry, key: str) -> dict[str, CaseChoice]:
    """Per named case, the candidate timed fastest there where that is not the default (and the default
    was timed there too: no override without a comparison)."""
    times = [(e, row, _case_times(row, key)) for _, e, row in timed]
    base = next(ts for e, _, ts in times if e.hash == default.hash)
    out = {}
    for case, dims in cases.items():
        if case not in base:
            continue
        e, row, ts = min(((e, row, ts) for e, row, ts in times if case in ts), key=lambda x: (x[2][case], x[0].name))
        if e.hash != default.hash and ts[case] < base[case]:
            out[case] = CaseChoice(dict(dims), e.name, e.hash, row.ptx_sha256, ts[case], base[case])
    return out


def uneven_timing(catalog: Catalog, store: Store, device: str, ops: set[str]) -> list[str]:
    """One note per op and types whose timed variants on this device were timed at different named cases
    (a `kreg verify --max-case-mb` run, say): a profile ranks them on the common cases only."""
    verdicts = latest_verdicts(store, device)
    groups: dict[tuple, list[tuple[Entry, StoredVerdict]]] = {}
    for e in catalog.entries:
        row = verdicts.get(e.hash)
        if e.op in ops and row and _speed(row) is not None:
            groups.setdefault((e.op, tuple(sorted(e.variant.types.items()))), []).append((e, row))
    notes = []
    for (op, types), timed in sorted(groups.items()):
        key = _time_key([row for _, row in timed])
        common, every = _common_and_every([row for _, row in timed], key)
        if len(timed) > 1 and every != common:
            short = sorted(e.name for e, row in timed if set(_case_times(row, key)) != every)
            notes.append(f"{op} {' '.join(v for _, v in types)}: {len(every - common)} named case(s) timed for only "
                         f"some variants (not for {', '.join(short[:4])}{', ..' if len(short) > 4 else ''}); profiles rank "
                         f"on the {len(common)} common ones: `kreg verify --speed-cases all` without --max-case-mb "
                         f"times them all")
    return notes


def resolve(profile: str, device: str, catalog: Catalog, store: Store, checker_version: str,
            unusable=None) -> Resolution:
    """unusable(entry) -> a reason the caller cannot run that entry (passed over), or None."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (profiles: {', '.join(PROFILES)})")
    verdicts = latest_verdicts(store, device)
    groups: dict[tuple, list[Entry]] = {}
    for e in catalog.entries:
        groups.setdefault((e.op, tuple(sorted(e.variant.types.items()))), []).append(e)
    choices = []
    for (op, types), entries in sorted(groups.items()):
        c = Choice(op, dict(types))
        ok: list[tuple[Entry, StoredVerdict]] = []
        for e in sorted(entries, key=lambda e: e.name):
            row = verdicts.get(e.hash)
            if profile == "safe-only":
                proofs = row and proof(store, e.hash, row.ptx_sha256, checker_version)
                why = why_not_safe(e, row, checker_version, proofs)
            else:
                why = _why_not_conformant(row)
            why = why or (unusable and unusable(e))
            if why:
                c.passed_over[e.name] = why
            else:
                ok.append((e, row))
        if ok:
            timed = [(t, e, row) for e, row in ok if (t := _speed(row)) is not None]
            if timed and (profile == "fastest" or len(timed) == len(ok) > 1):
                key = _time_key([row for _, _, row in timed])
                (t, e, row), basis = _fastest(timed, key)
                c.why = (f"fastest conformant variant ({basis})" if profile == "fastest" else
                         f"safe, proven on all four properties for all dims, numerics pass; the fastest such ({basis})")
                c.by_case = _by_case(catalog.ops[op].cases, timed, e, key)
                c.by_class = by_class(catalog.ops[op].dims, catalog.ops[op].cases,
                                      [(e2, r2.ptx_sha256, _case_times(r2, key)) for _, e2, r2 in timed], e.hash)
            else:
                rank = {"safe": 0, "unsafe": 1, "vendor": 2}
                e, row = min(ok, key=lambda x: (rank.get(x[0].variant.safety, 3), x[0].name))
                c.why = ("safe, proven on all four properties for all dims, numerics pass" if profile == "safe-only"
                         else "conformant; no speed measured on this device kind, so the safe one is preferred")
            c.variant, c.hash, c.ptx_sha256, c.median_us = e.name, e.hash, row.ptx_sha256, _speed(row)
            for e2, row2 in ok:
                if e2.name != e.name:
                    t2 = _speed(row2)
                    at = sorted(n for n, cc in c.by_case.items() if cc.variant == e2.name)
                    cls = sorted(n for n, cc in c.by_class.items() if cc.variant == e2.name)
                    c.passed_over[e2.name] = (
                        (f"slower by the ranking above ({t2:.1f} us at its largest case)"
                         if t2 is not None and c.median_us is not None
                         else "also qualifies; not preferred")
                        + (f"; runs instead at {len(at)} named case(s) where it is faster: {', '.join(at)}" if at else "")
                        + (f"; runs instead for other dims with {'; '.join(cls)}" if cls else ""))
        choices.append(c)
    kinds = sorted({str(r.device_kind) for r in verdicts.values()})
    return Resolution(profile, device, kinds, checker_version, choices)
