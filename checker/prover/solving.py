"""Deterministic solving: every z3 call the prover makes is bounded by z3's resource units ("rlimit", a count
of solver work that is the same on every machine), runs an explicit strategy with no wall-clock branch, and is
logged (what closed it, the units it used) so that a proof's work has a digest to compare across machines.

Why explicit strategies: z3's default tactic for integer problems (qfnia, qflia) tries bounded searches under
wall-clock limits (try_for) before its SMT core, so on a loaded or slower machine the same query took another
path and a proof could flip. Here a bitvector query runs in the incremental SMT core alone (z3.SimpleSolver, no
tactic fallback), and an integer query runs INT_STEPS in order, each in a fresh solver under its own share of the
query's units; the first step that answers decides it. The wall clock is only a guard against a machine that
is far too slow: the guards count the process's CPU time (so a machine's load does not trip them, only a far
slower core or a phase of z3 that counts little work), and when one stops a query or a variant, WallClockStop is
raised and nothing is decided (KREG_PROVER_GUARD scales them). Every call is logged with its query's key, which
makes the proof's record (checker/prover/records.py); a Budget given a record replays it, solving each query the
record has an unsat core of on that core alone (unsat_core, BvCores)."""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import z3

from kreg.checker.prover.intabs import IntAbs
from kreg.checker.prover.records import Record, RecordMiss, Replay, query_key
from kreg.checker.prover.slicing import Cone

# A query's nominal budget is in ms of solver work on the reference machine (the project VM); it gets
# RLIMIT_BASE[kind] + RLIMIT_PER_MS[kind] units per nominal ms (bench/results/prover_rlimit.txt has the
# calibration; the base covers an integer query's fresh solver, which spends a few million units on
# preprocessing the launch's constraints). The variant's budget is counted in the same units.
RLIMIT_PER_MS = {"bv": 12_000, "int": 5_000}
RLIMIT_BASE = {"bv": 0, "int": 1_500_000}
GUARD = float(os.environ.get("KREG_PROVER_GUARD", "1"))   # scales both guards below
WALL_GUARD = 60 * GUARD          # x the nominal ms: a query's CPU-time guard (an environment stop, never a verdict);
                                 # generous: z3's arithmetic has phases that count few units (see as_smt2)
VARIANT_WALL_GUARD = 10 * GUARD  # x the variant's budget in ms: the same for the whole variant
MIN_GUARD_S = 1.0                # the shortest guard a query gets (s of CPU time)
VARIANT_GUARD_FLOOR_S = 60.0     # added to the variant's guard: symbolic execution, a small budget
CORE_UNITS = 4                   # x the units a query's step used: what finding its unsat core may use (unsat_core)
BV_CORE_BASE = 2_000_000         # added for a bitvector query (BvCores): a fresh solver takes the launch's constraints


class WallClockStop(Exception):
    """A clock guard stopped the proof: the environment (a far slower or overloaded machine), never the
    kernel. Nothing is decided; run with fewer jobs or a longer guard (KREG_PROVER_GUARD=3)."""


class _Watchdog:
    """Interrupts the z3 context of the check in progress once the process has spent that check's CPU time
    (z3's own timeout counts wall time, which a loaded machine stretches). One polling thread per process."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ctx, self.deadline, self.fired, self.pid = None, 0.0, False, None

    def arm(self, ctx, cpu_s: float) -> None:
        if self.pid != os.getpid():          # first use in this process (a forked child has no thread)
            self.pid = os.getpid()
            threading.Thread(target=self._run, daemon=True).start()
        with self.lock:
            self.ctx, self.deadline, self.fired = ctx, time.process_time() + cpu_s, False

    def disarm(self) -> bool:
        with self.lock:
            fired, self.ctx = self.fired, None
        return fired

    def _run(self) -> None:
        while True:
            time.sleep(0.05)
            with self.lock:
                if self.ctx is not None and time.process_time() > self.deadline:
                    self.ctx.interrupt()
                    self.fired, self.ctx = True, None


_WATCHDOG = _Watchdog()


def _pre(ctx):
    """z3's qfnia preamble (simplification, propagation, equation solving), without its time-bounded parts."""
    return z3.Then(z3.Tactic("simplify", ctx=ctx), z3.Tactic("propagate-values", ctx=ctx),
                   z3.Tactic("solve-eqs", ctx=ctx),
                   z3.With(z3.Tactic("ctx-simplify", ctx=ctx), max_depth=30, max_steps=5_000_000),
                   z3.With(z3.Tactic("simplify", ctx=ctx), pull_cheap_ite=True, local_ctx=True,
                           local_ctx_limit=10_000_000),
                   z3.Tactic("elim-uncnstr", ctx=ctx), ctx=ctx)


def _smt(ctx):
    return z3.Then(_pre(ctx), z3.With(z3.Tactic("simplify", ctx=ctx), som=True), z3.Tactic("smt", ctx=ctx), ctx=ctx)


def _nlsat(ctx):
    return z3.Then(_pre(ctx), z3.With(z3.Tactic("simplify", ctx=ctx), som=True), z3.Tactic("qfnra-nlsat", ctx=ctx),
                   ctx=ctx)


# The integer strategy: (name, share of the query's units, the answers taken from it, tactic, on the slice).
# First the SMT core on the query's cone of influence (checker/prover/slicing.py; skipped where the cone is the
# whole query) under a quarter of the units: its unsat is the whole query's, at a fraction of the preprocessing
# (the slices that close use a few per cent of it); anything else moves on to the whole query, so a slice never
# decides less than the whole. z3's default strategy for these (qfnia) ran a
# bounded bit-blasting search for a model, then the SMT core under a 2 s wall-clock limit, then nlsat (3 s), then
# the SMT core again. Here the SMT core gets the whole nominal budget on the whole query (what closed every query
# on the idle reference machine) and nlsat a quarter more (what z3 tried next on a slower one; sound for unsat
# over the integers: no real solution, no integer one). The bounded search is left out: only `unsat` is ever used
# from an integer query, and its unsat means nothing (an under-approximation).
INT_STEPS = (("slice", 0.25, ("unsat",), _smt, True), ("smt", 1.0, ("sat", "unsat"), _smt, False),
             ("nlsat", 0.25, ("sat", "unsat"), _nlsat, False))


@dataclass
class WorkLog:
    """Every solver call of one proof, in order: its kind, the step that answered, its result, its units and
    its query's key."""
    calls: list = field(default_factory=list)

    def add(self, kind: str, step: str, result: str, units: int, key: str = "") -> None:
        self.calls.append((kind, step, result, int(units), key))

    @property
    def units(self) -> int:
        return sum(c[3] for c in self.calls)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.calls, separators=(",", ":")).encode()).hexdigest()

    def summary(self, budget_ms: float, used_ms: float) -> dict:
        steps: dict[str, int] = {}
        for kind, step, result, _, _ in self.calls:
            if result == "unsat":
                steps[f"{kind}/{step}"] = steps.get(f"{kind}/{step}", 0) + 1
        return {"queries": len(self.calls), "units": self.units, "budget_ms": budget_ms,
                "budget_used": round(used_ms / budget_ms, 4) if budget_ms else None,
                "closed_by": dict(sorted(steps.items())), "digest": self.digest()}


class Budget:
    """A variant's proof budget: ms of solver work on the reference machine, counted in rlimit units
    (RLIMIT_PER_MS, a fresh solver's preprocessing included) by every query, and a guard of VARIANT_WALL_GUARD x
    those ms of the process's CPU time that raises WallClockStop. Only the guard depends on the machine. With a
    replay (a proof record of the same PTX and checker), a query the record shows unanswered is not run but
    charged and logged as recorded, so the budget and the log follow the recorded proof's exactly; so is
    every query of a property the record shows undecided in this launch (`following`), whose replay must end
    undecided again (settled)."""

    def __init__(self, ms: float, replay: Replay | None = None, cores: bool = False):
        self.ms = ms
        self.ms_left = ms
        self.deadline = time.process_time() + (VARIANT_WALL_GUARD * ms / 1000 + VARIANT_GUARD_FLOOR_S) * (
            1 + CORE_UNITS if cores else 1)     # finding cores is more work on the same queries
        self.log = WorkLog()
        self.replay = replay
        self.undecided: list[list[str]] = []      # per launch settled, the properties left unknown
        self.following: str | None = None         # the undecided property whose recorded answers are followed
        self.followed: set[str] = set()           # the properties followed in this launch
        self.facts: list[tuple[str, bool]] = []   # the quick checks (always): key, held
        self.fact_answers: dict[str, bool] = {}   # each check's answer by key: asked again, not solved again
        self._base_keys: dict[tuple, str] = {}
        self.cores: dict[str, list] | None = {} if cores else None   # [solver, indices] by "key/step" (unsat_core)

    def fact_key(self, constraints, f, units: int, text: tuple | None = None) -> str:
        """A quick check's identity: its constraints' (computed once per list of them, or per name of their text
        where the caller has one), its formula, its units."""
        ids = text if text is not None else tuple(c.get_id() for c in constraints)
        base = self._base_keys.get(ids)
        if base is None:
            base = self._base_keys[ids] = query_key(*(c.sexpr() for c in constraints))
        return query_key("fact", str(units), base, f.sexpr())

    @contextmanager
    def deciding(self, prop: str):
        """While one property's queries are decided: in a replay, those of a property the record shows
        undecided in this launch are followed, not solved again (a verdict rests on none of them)."""
        if self.replay is not None and prop in self.replay.undecided_in(len(self.undecided)):
            self.following = prop
            self.followed.add(prop)
        try:
            yield
        finally:
            self.following = None

    @contextmanager
    def allowance(self, ms: float):
        """The queries within run on an allowance of their own, ms of work (and its share of the guard), and leave
        the variant's budget as it was: a second look that cannot take work from what is decided after it."""
        saved, self.ms_left = self.ms_left, ms
        self.deadline += VARIANT_WALL_GUARD * ms / 1000
        try:
            yield
        finally:
            self.ms_left = saved

    def settled(self, unknown: set[str]) -> None:
        """The launch's verdicts are in (unknown: the properties left undecided). A property whose recorded
        answers were followed must be undecided again: proven or refuted is only ever reached by solving."""
        if self.followed - unknown:
            raise RecordMiss(f"{sorted(self.followed - unknown)} undecided in the record, decided in the replay")
        self.undecided.append(sorted(unknown))
        self.followed = set()

    def follow(self, kind: str, step: str, recorded, key: str) -> bool:
        """A recorded unsat of the property being followed: charged and logged, not solved again (True)."""
        if self.following is None or recorded is None or recorded[0] != "unsat":
            return False
        self.skip(kind, step, *recorded, key)
        self.replay.followed += 1
        return True

    def left_s(self) -> float:
        return self.deadline - time.process_time()

    def spent(self) -> str | None:
        """Why no more queries may run ("work budget ..."), or None. Raises WallClockStop past the guard."""
        if self.ms_left <= 0:
            return "work budget of the variant exhausted"
        if self.left_s() <= 0:
            raise WallClockStop(f"the variant's CPU-time guard ({VARIANT_WALL_GUARD:g} x its budget of "
                                f"{self.ms / 1000:.0f} s of solver work) was reached")
        return None

    def units(self, kind) -> int:
        return int(RLIMIT_BASE[kind] + RLIMIT_PER_MS[kind] * self.ms_left)

    def charge(self, kind, used: int) -> None:
        self.ms_left -= used / RLIMIT_PER_MS[kind]

    def skip(self, kind: str, step: str, result: str, units: int, key: str) -> None:
        """A recorded call not run again: charged and logged as the record has it."""
        self.charge(kind, units)
        self.log.add(kind, step, result, units, key)
        self.replay.skipped += 1

    def record(self, ptx_sha256: str, checker_version: str) -> Record:
        """The proof's record so far: its calls and the work they add up to (checker/prover/records.py)."""
        cores = {**(self.replay.cores if self.replay is not None else {}), **(self.cores or {})}
        return Record(ptx_sha256, checker_version, [list(c) for c in self.log.calls],
                      self.log.summary(self.ms, self.ms - self.ms_left), [list(u) for u in self.undecided],
                      [list(f) for f in self.facts], dict(sorted(cores.items())) or None)

    def summary(self) -> dict:
        """The work of the proof: queries, units, the share of the budget used, the steps that closed them."""
        out = self.log.summary(self.ms, self.ms - self.ms_left)
        if self.replay is not None:
            out["replay"] = self.replay.summary()
        return out


def _rcount(s) -> int:
    """z3's resource counter (shared by all solvers of the context, cumulative)."""
    try:
        return int(s.statistics().get_key_value("rlimit count"))
    except (z3.Z3Exception, KeyError):
        return 0


def step_limit(kind: str, nominal_ms: float, budget: Budget, share: float = 1.0) -> tuple[int, bool]:
    """The units a query's step may use (share x nominal_ms, no more than the variant's budget has left; never 0:
    to z3 that is no limit) and whether the budget capped it."""
    rl, left = int((RLIMIT_BASE[kind] + RLIMIT_PER_MS[kind] * nominal_ms) * share), budget.units(kind)
    return max(1, min(rl, left)), left < rl


def limited_check(s, kind: str, step: str, nominal_ms: float, budget: Budget, share: float = 1.0, key: str = "",
                  recorded: int | None = None):
    """s.check() under the resource limit for share x nominal_ms (no more than the variant's budget has
    left) and the CPU-time guard: (result, why) where why, for unknown, says what stopped it. A stop by the
    guard raises WallClockStop: it says nothing about the kernel. A replayed query is charged and logged with
    its recorded units (an incremental solver that skipped a query may count a few units more or less)."""
    rl, capped = step_limit(kind, nominal_ms, budget, share)
    guard_s = _guard_s(nominal_ms, budget, share)
    r, actual, stopped = _bounded(s, rl, guard_s)
    used = actual if recorded is None else recorded
    budget.charge(kind, used)
    if r != z3.unknown:
        budget.log.add(kind, step, str(r), used, key)
        return r, None
    if actual >= rl:
        budget.log.add(kind, step, str(r), used, key)
        return r, "work budget of the variant exhausted" if capped else f"resource limit of {rl} rlimit units reached"
    if stopped:
        raise WallClockStop(f"a solver query's CPU-time guard ({guard_s:.0f} s) was reached after {actual} of "
                            f"{rl} rlimit units")
    budget.log.add(kind, step, str(r), used, key)
    return r, s.reason_unknown()


def _guard_s(nominal_ms: float, budget: Budget, share: float = 1.0) -> float:
    return max(MIN_GUARD_S, min(WALL_GUARD * nominal_ms * share / 1000, budget.left_s()))


def _bounded(s, rl: int, guard_s: float):
    """s.check() under rl units and the CPU-time guard: (result, units used, whether the guard stopped it)."""
    s.set("rlimit", rl)             # relative to the context's count at check(), not cumulative (z3 5.4.1)
    c0 = _rcount(s)
    _WATCHDOG.arm(s.ctx, guard_s)
    try:
        r = s.check()
    finally:
        stopped = _WATCHDOG.disarm()
    return r, _rcount(s) - c0, stopped


def into(ctx, fs):
    """fs (z3 formulas of the main context) copied into ctx, in one pass: z3's work on a query depends on
    its terms' ids, which in the main context follow the order Python built them in (set orders change
    with the interpreter's hash seed); copied into a context of their own they are numbered by structure."""
    fs = list(fs)
    if not fs:
        return []
    if len(fs) == 1:
        return [fs[0].translate(ctx)]
    return list(z3.And(*fs).translate(ctx).children())


def as_smt2(fs) -> str:
    """fs as SMT-LIB text: what an integer query's solver parses in a fresh context. Its terms are then numbered
    in the text's order (z3's work depends on term ids); a translated copy of the same terms, numbered as the
    main context's walk met them, sent z3's arithmetic core into a search that ran for minutes while counting
    almost no resource units (mk_bound_axioms in branch and bound: attention_prefill_bf16_safe), which only a
    clock could stop. Made by the C calls of z3.Solver().add(*fs).to_smt2() in their order (a solver, each assert,
    its assertions read back, printed), without the Python wrappers' sort checks and references around each one:
    what the main context's later terms are numbered depends on every call made there (z3's simplify sorts by
    those numbers), so none is left out or moved (printing from fs without the read-back changes them)."""
    ctx = z3.main_ctx()
    s = z3.Solver(ctx=ctx)
    if not all(isinstance(f, z3.BoolRef) and f.ctx is ctx for f in fs):
        s.add(*fs)                  # anything else: cast as the wrapper casts it
        return s.to_smt2()
    for f in fs:
        z3.Z3_solver_assert(ctx.ref(), s.solver, f.as_ast())
    es = z3.AstVector(z3.Z3_solver_get_assertions(ctx.ref(), s.solver), ctx)
    n = len(es)
    asts = [z3.Z3_ast_vector_get(ctx.ref(), es.vector, i) for i in range(n)]
    last = asts.pop() if asts else z3.BoolVal(True, ctx).as_ast()
    text = z3.Z3_benchmark_to_smtlib_string(ctx.ref(), "benchmark generated from python API", "", "unknown", "",
                                            len(asts), (z3.Ast * len(asts))(*asts), last)
    del es, asts, last
    return text


class Model:
    """A z3 model found in a solver's own context, read on main-context terms (z3 terms only: nothing is
    evaluated as Python)."""

    def __init__(self, m, ctx):
        self.m, self.ctx = m, ctx

    def value(self, e):
        """The model's value of the z3 term e (unconstrained symbols completed with a default)."""
        return self.m.evaluate(e.translate(self.ctx), model_completion=True)


class BvSolver:
    """One incremental SMT solver (z3's core alone: no tactic fallback) holding the launch's constraints in a
    z3 context of its own; each query is pushed and popped with its own limits, under the variant's budget.

    In a replay, a query the record shows unsat with a core (BvCores) is solved on that core of the launch's
    constraints and the query by a fresh SMT core (in one context for the launch's such checks), and one the record
    shows unknown, or sat where its caller uses only the answer (answer_only: sat then proves no more than unknown,
    and has no model), is not run again but charged and logged as recorded. Each is kept (its terms, in that
    context) and run in the incremental solver, in order, before the next query that is: that solver's answers and
    models depend on every query it has seen (an unknown one too: a later sat query can come out unknown without
    it), so it sees what it would have without these shortcuts."""

    def __init__(self, base, timeout_ms, budget: Budget):
        self.ctx = z3.Context()
        self.s = z3.SimpleSolver(ctx=self.ctx)
        self.s.add(*into(self.ctx, base))
        self.base = list(base)
        self.budget = budget
        self.timeout_ms = timeout_ms
        self.base_key = query_key(*(c.sexpr() for c in base))
        self.park = None            # the context the queries answered aside are solved and kept in (pending)
        self.park_base: dict = {}   # the launch's constraints translated there, by index
        self.pending: list = []     # those queries, in order: (their terms in park, result, rlimit, guard)
        self.cores: BvCores | None = None       # where the budget makes cores

    def check(self, f, extra=(), timeout_ms=None, answer_only=False):
        if spent := self.budget.spent():
            return "unknown", None, spent
        nominal = timeout_ms or self.timeout_ms
        key = query_key("bv", self.base_key, str(nominal), *(g.sexpr() for g in [f, *extra]))
        replay = self.budget.replay
        occ = replay.take(key) if replay is not None else None
        recorded = (occ or {}).get("smt")       # (result, units) in the record, where it has this query
        if recorded is not None and recorded[0] == "unknown":
            self._park(f, extra, nominal, "unknown")
            self.budget.skip("bv", "smt", *recorded, key)
            return "unknown", None, "solver: not answered within its limit in the recorded proof (not run again)"
        if self.budget.follow("bv", "smt", recorded, key):
            return "unsat", None, None
        core = replay.core(key, "smt", ("bv",)) if recorded is not None and recorded[0] == "unsat" else None
        if core is not None and core[1] and core[1][-1] >= len(self.base):     # not this launch's: solved whole
            core = None
        if core is not None or recorded is not None and recorded[0] == "sat" and answer_only:
            return self._aside(f, extra, nominal, key, recorded, core)
        self._catch_up()
        self.s.push()
        try:
            q = into(self.ctx, [f, *extra])
            self.s.add(*q)
            r, why = limited_check(self.s, "bv", "smt", nominal, self.budget, key=key,
                                   recorded=recorded[1] if recorded is not None else None)
            if recorded is not None:
                if str(r) != recorded[0]:
                    raise RecordMiss(f"a bitvector query the record shows {recorded[0]} gave {r}")
                replay.replayed += 1
            if r == z3.unsat and self.budget.cores is not None:
                rl, _ = step_limit("bv", nominal, self.budget)
                if self.cores is None:
                    self.cores = BvCores(self.base)
                found = self.cores.of(q, rl, self.budget.log.calls[-1][3], _guard_s(nominal, self.budget))
                if found is not None:
                    self.budget.cores[f"{key}/smt"] = found
            del q           # before the pop, which frees the query's terms (their ids are reused in this order)
            if r == z3.sat:
                return "sat", Model(self.s.model(), self.ctx), None
            if r == z3.unsat:
                return "unsat", None, None
            return "unknown", None, f"solver: {why}"
        except z3.Z3Exception as e:
            return "unknown", None, f"solver error: {e}"
        finally:
            self.s.pop()

    def _aside(self, f, extra, nominal, key, recorded, core):
        """A recorded query answered without the incremental solver: on its core (unsat, else a miss), or as
        recorded (an answer-only sat); kept for _catch_up. The main context sees the calls it would have (into)."""
        parked = self._park(f, extra, nominal, recorded[0])
        if core is None:
            self.budget.skip("bv", "smt", *recorded, key)
            return "sat", None, None
        try:
            r, _ = limited_check(self._core_solver(core[1], parked), "bv", "smt", nominal, self.budget, key=key,
                                 recorded=recorded[1])
        except z3.Z3Exception as e:
            raise RecordMiss(f"a bitvector query's recorded core gave a solver error: {e}") from e
        if r != z3.unsat:
            raise RecordMiss(f"a bitvector query the record shows unsat gave {r} on its recorded core")
        self.budget.replay.replayed += 1
        self.budget.replay.cored += 1
        return "unsat", None, None

    def _park(self, f, extra, nominal, result: str):
        """The query's terms in park, kept for _catch_up to run in order with its recorded result."""
        if self.park is None:
            self.park = z3.Context()
        rl, _ = step_limit("bv", nominal, self.budget)
        parked = into(self.park, [f, *extra])
        self.pending.append((parked, result, rl, _guard_s(nominal, self.budget)))
        return parked

    def _core_solver(self, ids, parked):
        """A fresh SMT core in park on the launch's constraints base[ids] and the parked query (one context for all:
        making a z3 context costs more than most of these checks)."""
        for i in ids:
            if i not in self.park_base:
                self.park_base[i] = self.base[i].translate(self.park)
        s = z3.SimpleSolver(ctx=self.park)
        s.add(*[self.park_base[i] for i in ids], *parked)
        return s

    def _catch_up(self) -> None:
        """The queries answered aside, run in the incremental solver in order as they would have been (each
        must give its recorded answer again: else this solver is not where the record's was, a miss)."""
        pending, self.pending = self.pending, []
        for parked, result, rl, guard_s in pending:
            self.s.push()
            try:
                self.s.add(*into(self.ctx, parked))
                r, _, stopped = _bounded(self.s, rl, guard_s)
                if stopped:
                    raise WallClockStop(f"a solver query's CPU-time guard ({guard_s:.0f} s) was reached")
                if r == z3.unknown:
                    self.s.reason_unknown()
                if str(r) != result:
                    raise RecordMiss(f"a bitvector query the record shows {result} gave {r} in order")
            finally:
                self.s.pop()


def _fresh_core_solver(base, ids, query):
    """An SMT core in a fresh context on the launch's constraints base[ids] (main-context terms) and the query's
    terms (of any context), each translated on its own, in that order: no term is made in the contexts they come
    from."""
    ctx = z3.Context()
    s = z3.SimpleSolver(ctx=ctx)
    s.add(*[base[i].translate(ctx) for i in ids], *[t.translate(ctx) for t in query])
    return s


class BvCores:
    """Unsat cores of a launch's bitvector queries (for a record: made with cores=True): one incremental SMT core in
    a context of its own holds each of the launch's constraints under a tracking literal; a query found
    unsatisfiable is pushed there and checked under all the literals (at most CORE_UNITS x the units the query used
    plus BV_CORE_BASE), and the constraints of its unsat core are kept only where a fresh SMT core closes them with
    the query within half the query's own limit (the replay solves them so, under the whole limit, in a context it
    shares with the other cores' checks). Never charged to the variant's budget."""

    def __init__(self, base):
        self.base = base
        self.ctx = z3.Context()
        self.s = z3.SimpleSolver(ctx=self.ctx)
        self.marks = [z3.FreshBool("kreg_core", self.ctx) for _ in base]
        for m, c in zip(self.marks, base):
            self.s.add(z3.Implies(m, c.translate(self.ctx)))
        self.at = {m.get_id(): i for i, m in enumerate(self.marks)}

    def of(self, query, limit: int, used: int, guard_s: float) -> list | None:
        """["bv", indices] for a query (its terms, of any context) found unsatisfiable with the launch's
        constraints, or None where none is found (the replay solves the query in the incremental solver)."""
        self.s.push()
        try:
            self.s.add(*[t.translate(self.ctx) for t in query])
            self.s.set("rlimit", CORE_UNITS * used + BV_CORE_BASE)
            if _guarded(self.s, guard_s, *self.marks) != z3.unsat:
                return None
            core = sorted(self.at[c.get_id()] for c in self.s.unsat_core())
        finally:
            self.s.pop()
        if len(core) == len(self.base):
            return None
        alone = _fresh_core_solver(self.base, core, query)
        alone.set("rlimit", limit // 2)       # the replay solves it in a context of other such checks: a margin
        return ["bv", core] if _guarded(alone, guard_s) == z3.unsat else None


PROVING: ContextVar[Budget | None] = ContextVar("kreg_prover_budget", default=None)   # the proof under way


def always(constraints, f, units: int = 2_000_000, text: tuple | None = None, tactics: tuple = ()) -> bool:
    """f holds under the constraints (a quick check in a context of its own, bounded by units only; False
    if unsure): what symbolic execution asks while it builds a trace, so it must not depend on the clock.
    Within a proof (PROVING) each check is logged as a fact of its record; in a replay, one the record shows
    did not hold is not run again (False: nothing is assumed from it), one that held must hold again. A check
    asked again within one proof (the same key: the same constraints, formula and units, so the same answer) is
    answered from the first time. text, where given, names the constraints' text (Budget.fact_key). tactics, where
    given, is the sequence of z3 tactics the check runs instead of z3's SMT core (bit-blasting for a check on bit
    arithmetic: the same answer at a fraction of the units)."""
    if z3.is_true(z3.simplify(f)):
        return True
    budget = PROVING.get()
    key = budget.fact_key(constraints, f, units, text) if budget is not None else ""
    key = query_key(key, *tactics) if tactics and budget is not None else key
    held = budget.replay.take_fact(key) if budget is not None and budget.replay is not None else None
    if held is False:
        budget.replay.facts_skipped += 1
        budget.facts.append((key, False))
        return False
    got = budget.fact_answers.get(key) if budget is not None else None
    if got is None:
        ctx = z3.Context()
        s = z3.Then(*tactics, ctx=ctx).solver() if tactics else z3.SimpleSolver(ctx=ctx)
        s.set("rlimit", units)
        s.add(*into(ctx, [*constraints, z3.Not(f)]))
        got = s.check() == z3.unsat
        if budget is not None:
            budget.fact_answers[key] = got
    if budget is not None:
        if held is True and not got:
            raise RecordMiss("a fact that held in the record did not hold again")
        budget.facts.append((key, got))
    return got


class IntSolver:
    """The launch's constraints translated to integers (checker/prover/intabs.py), translated once on first use;
    each query runs INT_STEPS, each in a fresh solver in a z3 context of its own (z3's non-incremental tactics
    close these far faster than its incremental core). Only `unsat` is used. A query is built from its goal's
    cone of influence (checker/prover/slicing.py): the first `core` constraints (the launch's own) and the facts
    after them that share a fresh symbol with the goal; every translation still uses the bounds learnt from all
    of them, which hold in every model of the launch."""

    def __init__(self, base, budget: Budget, core: int | None = None):
        self.base, self.budget = base, budget
        self.core = len(base) if core is None else core
        self.ia = None

    def _start(self) -> None:
        self.ia = IntAbs()
        self.ia.learn(self.base)
        self.gbase = [self.ia.formula(c) for c in self.base]
        self.cneeds = [self.ia.needs([c.get_id()]) for c in self.base]
        self._cone = Cone(self.base[:self.core], self.base[self.core:])

    @property
    def cone(self) -> Cone:
        if self.ia is None:
            self._start()
        return self._cone

    def query(self, f, whole: bool = False) -> list:
        """The integer query for goal f: the constraints of its cone (all of them if whole), the side definitions
        and lemmas they need, f."""
        if self.ia is None:
            self._start()
        g = self.ia.formula(f)
        kept = range(len(self.base)) if whole else [*range(self.core), *(self.core + i for i in self.cone.of(f))]
        idx, monos = self.ia.needs([f.get_id()])
        for i in kept:
            idx, monos = idx | self.cneeds[i][0], monos | self.cneeds[i][1]
        return [*(self.gbase[i] for i in kept), *[self.ia.side[i] for i in sorted(idx)],
                *self.ia.lemmas_for(monos), g]

    def refutes(self, f, timeout_ms) -> bool:
        """True when the integer translation of f, on its cone or else with every constraint, is unsatisfiable."""
        if self.budget.spent():
            return False
        try:
            text = as_smt2(self.query(f))
            sliced = len(self.cone.of(f)) < len(self.cone.facts)
        except z3.Z3Exception:
            return False
        texts = {sliced: text}
        key = query_key("int", str(timeout_ms), text)
        occ = self.budget.replay.take(key) if self.budget.replay is not None else None
        for step, share, takes, tactic, on_slice in INT_STEPS:
            if on_slice and not sliced:         # the cone is the whole query: straight to it
                continue
            if self.budget.spent():
                return False
            recorded = occ.get(step) if occ is not None else None
            if occ is not None and recorded is None:     # the recorded proof's solver failed on this step
                continue
            if recorded is not None and recorded[0] != "unsat":     # proved nothing then: not run again
                self.budget.skip("int", step, *recorded, key)
                if recorded[0] in takes:
                    return False
                continue
            if self.budget.follow("int", step, recorded, key):
                return True
            if on_slice not in texts:
                try:
                    texts[on_slice] = as_smt2(self.query(f, whole=True))
                except z3.Z3Exception:
                    return False
            core = self.budget.replay.core(key, step) if recorded is not None else None
            s, fs = _solver_on(texts[on_slice], None if core and core[0] == "smt" else tactic)
            if core is not None and core[1][-1] >= len(fs):     # not this query's assertions: all of them
                core = None
                s, fs = _solver_on(texts[on_slice], tactic)
            s.add(*(fs if core is None else [fs[i] for i in core[1]]))
            rl, _ = step_limit("int", timeout_ms, self.budget, share)
            try:
                r, _ = limited_check(s, "int", step, timeout_ms, self.budget, share, key,
                                     recorded[1] if recorded is not None else None)
            except z3.Z3Exception:
                continue
            if recorded is not None:
                if r != z3.unsat:
                    raise RecordMiss(f"an integer query the record shows closed at step {step} gave {r}"
                                     + (" on its recorded core" if core is not None else ""))
                self.budget.replay.replayed += 1
                self.budget.replay.cored += core is not None
            if str(r) in takes:
                if r == z3.unsat and core is None and self.budget.cores is not None:
                    found = unsat_core(texts[on_slice], tactic, rl, self.budget.log.calls[-1][3],
                                       WALL_GUARD * timeout_ms * share / 1000)
                    if found is not None:
                        self.budget.cores[f"{key}/{step}"] = found
                return r == z3.unsat
        return False


def _solver_on(text: str, tactic):
    """A solver in a fresh context (the tactic's, or z3's SMT core alone where tactic is None) and the text's
    assertions parsed there, in that order (z3's work depends on term ids, which follow it)."""
    ctx = z3.Context()
    s = tactic(ctx).solver() if tactic is not None else z3.SimpleSolver(ctx=ctx)
    return s, z3.parse_smt2_string(text, ctx=ctx)


def unsat_core(text: str, tactic, limit: int, used: int, guard_s: float) -> list | None:
    """For an integer query (SMT-LIB text) that a step of INT_STEPS found unsatisfiable: [solver, indices], the
    indices of a subset of its assertions that is unsatisfiable too (the SMT core's unsat core under a tracking
    literal per assertion, at most CORE_UNITS x the units the step used plus a fresh solver's base), kept only where
    the step's strategy ("step") or else z3's SMT core alone ("smt") closes the subset within the step's own limit,
    as the replay will solve it. A replay then solves the subset instead of the whole query: unsatisfiable
    assertions stay so with more beside them, so its unsat is the whole query's, at a fraction of the work. Made for
    the record, never charged to the variant's budget; None where none is found (the replay solves the whole)."""
    ctx = z3.Context()
    fs = z3.parse_smt2_string(text, ctx=ctx)
    s = z3.SimpleSolver(ctx=ctx)
    s.set("rlimit", CORE_UNITS * used + RLIMIT_BASE["int"])     # the base: a fresh solver's own start
    marks = [z3.FreshBool("kreg_core", ctx) for _ in fs]
    for m, f in zip(marks, fs):
        s.add(z3.Implies(m, f))
    at = {m.get_id(): i for i, m in enumerate(marks)}
    if _guarded(s, guard_s, *marks) != z3.unsat:
        return None
    core = sorted(at[c.get_id()] for c in s.unsat_core())
    if not core or len(core) == len(fs):
        return None
    for solver, by in (("step", tactic), ("smt", None)):
        alone, fs = _solver_on(text, by)
        alone.add(*[fs[i] for i in core])
        alone.set("rlimit", limit)
        if _guarded(alone, guard_s) == z3.unsat:
            return [solver, core]
    return None


def _guarded(s, guard_s: float, *assumptions):
    """s.check(*assumptions) under the CPU-time guard; unknown where it or z3 stopped it."""
    _WATCHDOG.arm(s.ctx, max(MIN_GUARD_S, guard_s))
    try:
        return s.check(*assumptions)
    except z3.Z3Exception:
        return z3.unknown
    finally:
        _WATCHDOG.disarm()
