"""Proof records: what closed each solver query of a proof (the query's key, the strategy step that answered
it, its units), kept with the proof and shipped for the built-in registry, keyed by PTX sha256 and checker
version. A re-check with a record still solves every query it relies on from scratch (a record is never a
result), but goes straight to the step that closed it and skips the attempts that proved nothing (a query
that no step answered, an integer query no step found unsatisfiable: they only ever led to the fallbacks
that follow them). A property the record shows undecided (unknown) in a launch decides nothing, so its
queries are not solved again there either: their recorded answers are followed, and the replay must end
with that property unknown again in that launch (anything else is a miss: proven is only ever reached by
solving). The quick checks symbolic execution makes (solving.always: does a fact hold for every thread?)
are recorded too, with their outcome: one that did not hold then is not run again (nothing is assumed from
it), one that held is run again and must hold. If a recorded step no longer closes its query, the replay
stops (RecordMiss) and the proof runs again in full, saying so. A record made for shipping also holds, per closed
integer query, an unsat core (solving.unsat_core), and per closed bitvector query a subset of the launch's constraints
(solving.BvCores): the replay solves those assertions alone, whose unsat is the whole query's, far faster; a core
that does not close is a miss like any other. The path of a replay
depends only on the record and the PTX."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

FORMAT = 1


LET = re.compile(r"[$?][A-Za-z_]*\d+|\b[a-z]![0-9]+")     # the names _canonical renames
_SPLIT = re.compile(r"([$?!](?:(?<=[$?])[A-Za-z_]*\d+|(?<=!)[0-9]+))")   # the same from their rare first characters
                                                                       # (one class tried per character: faster)
_WORD = re.compile(r"\w")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def _bang_names(parts: list) -> None:
    """In a split of _SPLIT: where a "!digits" follows a lowercase letter that starts a word (a!12), the letter
    joins it, a name; any other "!digits" is text and stays as it is (what precedes a name is never a digit)."""
    for i in range(1, len(parts), 2):
        tok = parts[i]
        if tok[0] == "!":
            prev = parts[i - 1]
            if prev[-1:] in _LOWER and (not _WORD.match(prev[-2]) if len(prev) > 1 else i == 1):
                parts[i - 1], parts[i] = prev[:-1], prev[-1] + tok


def _canonical(text: str) -> str:
    """z3's printer names shared subterms after their term ids ($x1302), which follow the order a process
    built its terms in: renamed in order of appearance, the same query gives the same text in any process.
    (LET.sub with a counter, computed from a split on $, ? and ! and renamed by C-level maps: a scan that
    tries every letter, or a Python step per name, is slow on an integer query's megabytes of text.)"""
    parts = _SPLIT.split(text)          # text, name or "!digits", text, ...
    if "!" in text:
        _bang_names(parts)
        toks = parts[1::2]
        order = dict.fromkeys(t for t in toks if t[0] != "!")
    else:
        toks = parts[1::2]
        order = dict.fromkeys(toks)
    names = {t: f"$t{i}" for i, t in enumerate(order)}
    parts[1::2] = map(names.get, toks, toks)       # a "!digits" that is no name maps to itself
    return "".join(parts)


def query_key(*parts: str) -> str:
    """A query's identity: a digest of its text (SMT-LIB or z3's s-expressions) and its nominal budget."""
    h = hashlib.sha256()
    for p in parts:
        h.update(_canonical(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


class RecordMiss(Exception):
    """A recorded step did not close its query again: the record does not fit this proof."""


@dataclass
class Record:
    """The solver calls of one proof, in order: [kind, step, result, units, key] each."""
    ptx_sha256: str
    checker_version: str
    calls: list = field(default_factory=list)
    work: dict = field(default_factory=dict)        # the full search's work summary (solving.WorkLog.summary)
    undecided: list | None = None      # per launch, the properties whose queries left them unknown
    facts: list | None = None          # the quick checks, in order: [key, held] each
    cores: dict | None = None          # "key/step" -> [solver, the assertions of that query a replay solves]

    def to_json(self) -> dict:
        out = {"format": FORMAT, "ptx_sha256": self.ptx_sha256, "checker_version": self.checker_version,
               "work": self.work, "calls": [list(c) for c in self.calls]}
        if self.undecided is not None:
            out["undecided"] = [sorted(u) for u in self.undecided]
        if self.facts is not None:
            out["facts"] = [list(f) for f in self.facts]
        if self.cores:
            out["cores"] = {k: list(v) for k, v in sorted(self.cores.items())}
        return out

    @classmethod
    def from_json(cls, d: dict) -> "Record":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError("not a proof record of format %d" % FORMAT)
        calls = d.get("calls")
        if not isinstance(calls, list) or not all(
                isinstance(c, list) and len(c) == 5 and all(isinstance(x, str) for x in (c[0], c[1], c[2], c[4]))
                and isinstance(c[3], int) for c in calls):
            raise ValueError("a proof record's calls are [kind, step, result, units, key] each")
        undecided = d.get("undecided")
        if undecided is not None and not (isinstance(undecided, list) and all(
                isinstance(u, list) and all(isinstance(p, str) for p in u) for u in undecided)):
            raise ValueError("a proof record's undecided properties are a list of names per launch")
        facts = d.get("facts")
        if facts is not None and not (isinstance(facts, list) and all(
                isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and isinstance(f[1], bool) for f in facts)):
            raise ValueError("a proof record's facts are [key, held] each")
        cores = d.get("cores")
        if cores is not None and not (isinstance(cores, dict) and all(
                isinstance(k, str) and isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
                and isinstance(v[1], list) and all(type(i) is int for i in v[1]) for k, v in cores.items())):
            raise ValueError("a proof record's cores are [solver, assertion indices] by query key and step")
        return cls(str(d.get("ptx_sha256", "")), str(d.get("checker_version", "")), calls, dict(d.get("work") or {}),
                   undecided, facts, cores)

    def fits(self, ptx_sha256: str, checker_version: str, budget_ms: float | None = None) -> bool:
        """A record of this PTX by this checker (and, where given, at this budget: a query the budget cut
        short in the record would be skipped where a larger budget might close it)."""
        return self.ptx_sha256 == ptx_sha256 and self.checker_version == checker_version and (
            budget_ms is None or self.work.get("budget_ms") == budget_ms)

    def save(self, path: Path) -> None:
        """Written whole or not at all (a temporary file renamed over the old one)."""
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=0, separators=(",", ":")) + "\n")
        tmp.replace(path)


def load(path: Path) -> Record | None:
    """The record in path, or None where there is none or it does not parse."""
    try:
        return Record.from_json(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


class Replay:
    """A record read for a re-check: per query key, its occurrences in order, each the result and units of
    every step that ran on it."""

    def __init__(self, record: Record):
        self.answers: dict[str, list[dict[str, tuple[str, int]]]] = {}
        for kind, step, result, units, key in record.calls:
            occ = self.answers.setdefault(key, [])
            if not occ or step in occ[-1]:
                occ.append({})
            occ[-1][step] = (result, units)
        self.taken: dict[str, int] = {}
        self.undecided = [set(u) for u in record.undecided or []]
        self.facts: dict[str, list[bool]] = {}
        for key, held in record.facts or []:
            self.facts.setdefault(key, []).append(held)
        self.facts_taken: dict[str, int] = {}
        self.cores: dict[str, list[int]] = dict(record.cores or {})
        self.skipped = self.replayed = self.followed = self.facts_skipped = self.cored = 0

    def take(self, key: str) -> dict[str, tuple[str, int]] | None:
        """The record's next occurrence of this query (step -> (result, units)), or None where it has none."""
        occ = self.answers.get(key) or []
        i = self.taken.get(key, 0)
        if i >= len(occ):
            return None
        self.taken[key] = i + 1
        return occ[i]

    def take_fact(self, key: str) -> bool | None:
        """Whether the record's next occurrence of this quick check held (None where it has none)."""
        i = self.facts_taken.get(key, 0)
        occ = self.facts.get(key) or []
        if i >= len(occ):
            return None
        self.facts_taken[key] = i + 1
        return occ[i]

    def core(self, key: str, step: str, solvers: tuple[str, ...] = ("step", "smt")) -> tuple[str, list[int]] | None:
        """The recorded core of this query at this step: the solver that closes it (of an integer query, "step":
        the step's strategy, "smt": z3's SMT core alone; of a bitvector query, "bv": a fresh SMT core on those of
        the launch's constraints and the query) and indices of some of the query's assertions (of a bitvector
        query, of the launch's constraints; none is a core too: the query alone), which the replay solves instead
        of all of them (a subset found unsatisfiable makes the whole so). None where the record has none, names a
        solver not in solvers or is not such a pair (indices distinct, in increasing order, from 0): then all are
        solved."""
        core = self.cores.get(f"{key}/{step}")
        if not (isinstance(core, list) and len(core) == 2 and core[0] in solvers and isinstance(core[1], list)):
            return None
        ids = core[1]
        if not ids and core[0] != "bv" or not all(type(i) is int for i in ids) or ids and ids[0] < 0 \
                or any(a >= b for a, b in zip(ids, ids[1:])):
            return None
        return core[0], ids

    def undecided_in(self, launch: int) -> set[str]:
        """The properties the record shows unknown in this launch (none where it does not say)."""
        return self.undecided[launch] if launch < len(self.undecided) else set()

    def summary(self) -> dict:
        return {"replayed": self.replayed, "skipped": self.skipped, "followed": self.followed,
                "facts_skipped": self.facts_skipped, "cored": self.cored}
