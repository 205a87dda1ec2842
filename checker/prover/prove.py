"""The prover's entry point: for every launch of a variant, execute its PTX symbolically for two
arbitrary threads (checker/prover/symbolic.py) and decide four properties with z3 — read-only inputs,
in-bounds accesses, race freedom and barrier safety — for all dims the op allows. A query the solver
cannot close in time is retried for each of the op's named cases; a model is a witness, reported as
`refuted` only when it involves no over-approximated value (else `unknown`, with the witness)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import z3

from kreg import isolate as isolation
from kreg.registry.results import ALL_DIMS, PROPS, PropertyVerdict, Status
from kreg.registry.schema import Op, Variant

from kreg.checker.ptx import parse as P
from kreg.checker.ptx import toolchain
from kreg.checker.ptx.digest import ptx_digest
from kreg.checker.prover.env import AXES, LaunchEnv
from kreg.checker.prover.records import Record, RecordMiss, Replay
from kreg.checker.prover.solving import (CORE_UNITS, PROVING, VARIANT_GUARD_FLOOR_S, VARIANT_WALL_GUARD, Budget,
                                         BvSolver, IntSolver, WallClockStop, always)
from kreg.checker.prover.slicing import weakenings
from kreg.checker.prover.state import Unsupported
from kreg.checker.prover.symbolic import Executor
from kreg.checker.ptx.cfg import exit_ipdom, is_block_barrier, is_block_collective, is_warp_sync, sync_branches
from kreg.checker.prover.witness import replay

CHECKER_VERSION = "prover-0.20"  # 0.20: a loop unrolled beside a remainder loop keeps U source iterations ahead of its bound where its entry implies it (loops.unrolled_lemmas); a property left open gets a second look at its queries with the atoms of unrelated loops and branches dropped (slicing.weakenings), on an allowance of its own
                                 # 0.19: a 0f/0d literal keeps its bits (a signalling NaN was quieted); a { } block's labels its own; a tag trusted only in its buffer's state space (.shared::cta is .shared); cvta to and from a window (shared, local) adds or takes its base, a generic access is one of the window it falls in, else global; cp.async ignore-src and cache-policy operands; lop3 d|p; bar.red with a thread count unknown; atomics of .cta scope race across blocks
                                 # 0.18: special registers at their widths (%clock64, %globaltimer, %gridid are 64 bits, were 32 widened: a test on a timer above 2**32 was taken as never true); a clock, timer, %smid or %warpid is a new value at every read
                                 # 0.17: an integer query is built from its goal's cone of influence (checker/prover/slicing.py: the launch's own constraints and the facts a fresh symbol of the goal reaches), not every fact of the launch
                                 # 0.16: a counted loop's exit test (counter != E) kept by the integer translation (an unsigned remainder of the distance; none for a step of one), also where the test ends the block before a latch that only branches back; only a test every latch makes
                                 # 0.15: atomic tickets (atom.add of a constant outside loops on a counter nothing else touches: distinct values below init + inc x a bound on the threads taking one); popc exact; a full-mask ballot every thread reaches once is one value per warp (its lane bit the thread's predicate); a loop counter widened and narrowed back (cvt) is an induction
                                 # 0.14: deterministic solving (checker/prover/solving.py: rlimit units only, explicit strategies, CPU-time guards that decide nothing); ld.global.nc / ldu of written bytes is a race; instructions of unknown effect Unsupported; a bounded emulator search refutes unknowns; alignment under in_bounds (every access at a multiple of its width, "misaligned ...")
                                 # 0.13: wgmma with A from registers and MN-major (transposed) operands; K-major footprint exact for any SBO; wgmma-only branches warpgroup-uniform; a loop's async count padded where paths differ
                                 # 0.12: what is in flight where a loop iteration starts (cp.async copies, wgmma reads,
                                 # writes not yet fenced for the async proxy; on entry or at a back edge) is bounded by
                                 # the waits and fences every iteration executes first, not only the header's first
                                 # cp.async wait (else in flight for ever); 0.11: wgmma.mma_async (128-byte-swizzle descriptors): shared reads pending from issue to
                                 # the wgmma.wait_group that retires them, generic writes invisible to them until the
                                 # writer's fence.proxy.async, block-uniform control and agreeing descriptors; 0.10: x | y and x ^ y exact (as x + y) where no bit can be one in both (known-zero
                                 # bits through shifts, masks, sums); merged registers in a fixed order (the solver's work
                                 # followed the string hash seed); thread-block cluster forms (barrier.cluster,
                                 # mapa, shared::cluster accesses) unknown, never a block barrier; 0.9: the variant budget counts solver work (rlimit), not the clock; griddepcontrol
                                 # (PDL) parsed, a no-op; 0.8: the barrier-epoch filter honours a pending cp.async
                                 # write's span; 0.7: toolchain hazards (a module global named SMEM or LOCAL) unknown
                                 # 0.6: cp.async (pending shared writes), ldmatrix, mma, exact bfe/bfi; race pairs
                                 # ordered by barrier epochs skipped; leftover queries refuted in bisected groups
                                 # 0.5: counters copied back by mov, steps recomputed in loops; queries combined per buffer
                                 # 0.4: per-query z3 resource limits (deterministic), wall clock only a guard
                                 # 0.3: address-based buffer attribution, early exits, __syncwarp, ...
# Earlier checker versions whose solving this one keeps unchanged (INT_STEPS and the bitvector solver, their
# limits, query keys, cores): a change that only alters which queries are built lists the version before it here,
# and that version's records carry over where a replay reproduces them exactly (carry=True, see _carried); a
# change to solving empties it.
CARRIES_FROM: tuple[str, ...] = ("prover-0.19",)
ASSUMPTIONS = ("pointer params are distinct, non-overlapping buffers of the sizes their shapes give, "
               "256-byte aligned (module and shared variables as their .align declares; extern shared arrays all alias the dynamic shared memory; with wgmma, a block's shared "
               "addresses lie below 2^18, as on sm_90); launch geometry "
               "within CUDA limits; a global address is its generic address, and the shared and local windows of "
               "the generic space lie above every global buffer; inputs (role in) are not modified by anyone else during the launch; the "
               "assembler translates the PTX as the PTX ISA says (its known exceptions are never proven: "
               "checker/ptx/toolchain.py)")


@dataclass
class _Q:
    """One query: a formula whose satisfiability is a violation."""
    formula: z3.BoolRef
    what: str
    info: dict = field(default_factory=dict)
    exact_check: z3.BoolRef | None = None


MEMORY_MB = int(os.environ.get("KREG_PROVER_MEMORY_MB", "6144"))
# A fresh interpreter for every isolated proof: a forked child inherits the caller's z3 terms, whose ids order
# the arguments z3 sorts (simplify), so a proof's queries, and its work, followed what the caller proved before.
# A fork server is such an interpreter, started once: it imports this module (no z3 term is made at import) and
# forks each proof's child from that state, saving each proof an interpreter start and its imports.
START = "forkserver"
PRELOAD = (__name__,)
GRACE_S = 10.0      # the hard limit of an isolated proof: (2 x VARIANT_WALL_GUARD + 0.5) x its budget + this


def hard_limit_s(budget_ms: int) -> float:
    """Wall-clock seconds after which an isolated proof of that budget is killed (not decided)."""
    return (2 * VARIANT_WALL_GUARD + 0.5) * budget_ms / 1000 + 2 * VARIANT_GUARD_FLOOR_S + GRACE_S    # CPU-time guards inside; a loaded machine stretches wall time


@dataclass
class Proof:
    """What the prover decided for a variant, and the solver work it took (solving.WorkLog.summary: queries,
    rlimit units, the share of the budget, which strategy step closed how many queries, a digest; with
    "replay" where a record was followed), and its record (checker/prover/records.py) where it ran a search."""
    verdicts: dict[str, PropertyVerdict]
    work: dict
    record: Record | None = None

    def to_json(self) -> dict:
        """As plain data (a witness may hold numbers of any kind; the assumptions kept with each verdict)."""
        return {"verdicts": {p: json.loads(json.dumps(v.to_json() | {"assumptions": v.assumptions}, default=str))
                             for p, v in self.verdicts.items()}, "work": self.work,
                "record": self.record.to_json() if self.record else None}

    @classmethod
    def from_json(cls, d: dict) -> "Proof":
        return cls({p: PropertyVerdict.from_json(v) for p, v in d["verdicts"].items()}, d["work"],
                   Record.from_json(d["record"]) if d.get("record") else None)


def prove_variant(variant: Variant, op: Op, ptx: str, *, timeout_ms: int = 10000,
                  budget_ms: int | None = None, isolate: bool = True, record: Record | None = None
                  ) -> dict[str, PropertyVerdict]:
    """The four verdicts for a variant (prove() without the work summary)."""
    return prove(variant, op, ptx, timeout_ms=timeout_ms, budget_ms=budget_ms, isolate=isolate, record=record).verdicts


def prove(variant: Variant, op: Op, ptx: str, *, timeout_ms: int = 10000, budget_ms: int | None = None,
          isolate: bool = True, record: Record | None = None, cores: bool = False, carry: bool = False) -> Proof:
    """The four verdicts for a variant and the work they took. timeout_ms is the nominal budget of one solver
    query (the all-dims attempt gets a fraction of it, each named case half); budget_ms (default timeout_ms)
    bounds the whole variant: both count solver work in deterministic units, so a query left unanswered when
    they run out is `unknown` on every machine, never `proven`. With isolate (the default) the proof runs in a
    child (kreg.isolate) under a hard wall-clock limit and a memory limit (KREG_PROVER_MEMORY_MB more than the
    caller has mapped); inside an isolated child already, it runs in place. A wall-clock guard or the hard
    limit stopping the proof raises WallClockStop: the environment, not the kernel, so nothing is decided.
    A record of an earlier proof of the same PTX by this checker is replayed (checker/prover/records.py):
    the same verdicts, faster; one that does not fit is ignored, one that no longer closes falls back. With
    cores, the proof's record also gets each closed integer query's unsat core (solving.unsat_core), which its
    replays then solve instead of the whole query: for records made to be shipped (more work now, less in every
    re-check; the verdicts and the work log are the same either way). With carry, a record of an earlier checker
    whose solving this one keeps (CARRIES_FROM) is followed too, and kept only where it is reproduced exactly
    (_carried; work["carried"] says which): how records are made again after a change to what queries are built."""
    if not isolate:
        return _prove_here(variant, op, ptx, timeout_ms, budget_ms, record, cores, carry)
    limit_s = hard_limit_s(budget_ms or timeout_ms) * (1 + CORE_UNITS if cores else 1)
    got = isolation.run(prove_json, variant, op, ptx, timeout_ms, budget_ms, record, cores, carry, timeout_s=limit_s,
                        memory_mb=MEMORY_MB, start=START, address_limit=True, preload=PRELOAD)
    if got.ok and "undecided" in got.value:
        raise WallClockStop(got.value["undecided"])
    if got.ok:
        return Proof.from_json(got.value)
    if got.status == "timeout":
        raise WallClockStop(f"the prover exceeded its hard wall-clock limit of {limit_s:.0f} s and was killed")
    why = {"error": f"prover error: {got.error}"}.get(got.status, f"prover: {got.error}")
    return Proof(_stamp({p: PropertyVerdict(Status.UNKNOWN, None, why) for p in PROPS}, ptx_digest(ptx)), {})


def prove_json(variant, op, ptx, timeout_ms, budget_ms, record: Record | None = None, cores: bool = False,
               carry: bool = False) -> dict:
    """{"verdicts": the four verdicts as plain data, "work": the work summary, "record": the proof's record},
    proved in this process (a witness may hold numbers of any kind), or {"undecided": why} when a wall-clock
    guard stopped it: what a caller that isolates the proof itself (the verify pipeline's child) runs."""
    try:
        return _prove_here(variant, op, ptx, timeout_ms, budget_ms, record, cores, carry).to_json()
    except WallClockStop as e:
        return {"undecided": str(e)}


def _stamp(verdicts: dict[str, PropertyVerdict], sha: str) -> dict[str, PropertyVerdict]:
    """Every verdict names the PTX it is about, the checker that made it and what that checker assumed."""
    for v in verdicts.values():
        v.ptx_sha256, v.checker_version, v.assumptions = sha, CHECKER_VERSION, ASSUMPTIONS
    return verdicts


def _prove_here(variant: Variant, op: Op, ptx: str, timeout_ms: int, budget_ms: int | None,
                record: Record | None = None, cores: bool = False, carry: bool = False) -> Proof:
    sha = ptx_digest(ptx)
    if carry and record is not None and record.checker_version in CARRIES_FROM:
        return _carried(variant, op, ptx, sha, timeout_ms, budget_ms or timeout_ms, record, cores)
    if record is None or not record.fits(sha, CHECKER_VERSION, budget_ms or timeout_ms):
        return _prove_once(variant, op, ptx, sha, timeout_ms, Budget(budget_ms or timeout_ms, cores=cores))
    try:
        return _prove_once(variant, op, ptx, sha, timeout_ms,
                           Budget(budget_ms or timeout_ms, Replay(record), cores=cores))
    except RecordMiss as e:         # the record does not fit this proof: the full search, saying so
        got = _prove_once(variant, op, ptx, sha, timeout_ms, Budget(budget_ms or timeout_ms, cores=cores))
        got.work["replay"] = {"fell_back": str(e)}
        return got


def _carried(variant: Variant, op: Op, ptx: str, sha: str, timeout_ms: int, budget_ms: int, record: Record,
             cores: bool) -> Proof:
    """The proof of a record of an earlier checker that solves as this one does (CARRIES_FROM), followed: where the
    replay reproduces every call (kind, step, result, units, key), quick check and undecided property of the record
    in order, this checker built the same queries in the same order, so its full search would have run each with the
    same text, solver history and limit and got the same answers: the replay's record, stamped with this version,
    is the full search's, with the record's cores as they were (cores made on the way are not added: a replay on a
    new core is a replay nobody has run). Anything else (a miss, one call more or less) is the full search itself."""
    old = record.checker_version
    if record.fits(sha, old, budget_ms):
        try:
            got = _prove_once(variant, op, ptx, sha, timeout_ms, Budget(budget_ms, Replay(record)))
            new = got.record
            if new is not None and (new.calls, new.facts or [], new.undecided or []) == (
                    [list(c) for c in record.calls], [list(f) for f in record.facts or []],
                    [list(u) for u in record.undecided or []]):
                new.cores = record.cores
                got.work["carried"] = {"from": old, "exact": True}
                return got
            why = "the replay's calls differ from the record's"
        except RecordMiss as e:
            why = str(e)
    else:
        why = "the record is of another PTX or budget"
    got = _prove_once(variant, op, ptx, sha, timeout_ms, Budget(budget_ms, cores=cores))
    got.work["carried"] = {"from": old, "exact": False, "why": why}
    return got


def _prove_once(variant: Variant, op: Op, ptx: str, sha: str, timeout_ms: int, budget: Budget) -> Proof:
    proving = PROVING.set(budget)       # the quick checks of symbolic execution are this proof's facts
    try:
        return _prove_module(variant, op, ptx, sha, timeout_ms, budget)
    finally:
        PROVING.reset(proving)


def _prove_module(variant: Variant, op: Op, ptx: str, sha: str, timeout_ms: int, budget: Budget) -> Proof:
    none = budget.record(sha, CHECKER_VERSION)     # before any solver call: an empty record
    try:
        module = P.parse(ptx)
    except P.ParseError as e:
        return Proof(_stamp({p: PropertyVerdict(Status.UNKNOWN, None, f"PTX not parsed: {e}") for p in PROPS}, sha),
                     {}, none)
    hazards = toolchain.hazards(module)
    if hazards:     # the machine code would not be this PTX: nothing proven about it would hold
        return Proof(_stamp({p: PropertyVerdict(Status.UNKNOWN, None, "toolchain hazard: " + "; ".join(hazards))
                             for p in PROPS}, sha), {}, none)
    total: dict[str, PropertyVerdict] = {}
    for n, launch in enumerate(variant.launches):
        try:
            res = _prove_launch(variant, op, module, launch, timeout_ms, budget, n)
        except (WallClockStop, RecordMiss):
            raise
        except (Unsupported, P.ParseError) as e:
            res = {p: PropertyVerdict(Status.UNKNOWN, None, f"unsupported: {e}") for p in PROPS}
        except Exception as e:     # never let a prover bug become a verdict other than unknown
            res = {p: PropertyVerdict(Status.UNKNOWN, None, f"prover error: {type(e).__name__}: {e}") for p in PROPS}
        if len(budget.undecided) <= n:      # the launch stopped before its verdicts were in
            budget.settled(set(PROPS))
        for p, v in res.items():
            if len(variant.launches) > 1:
                v.reason = f"launch {n} ({launch.entry}): {v.reason}" if v.reason else v.reason
                if v.witness is not None:
                    v.witness["launch"] = n
            old = total.get(p)
            if old is None or v.status < old.status or (     # the worst launch wins
                    v.status is old.status is Status.PROVEN and v.scope != ALL_DIMS):
                total[p] = v
    _check_assembly(total, variant, ptx)
    from kreg.checker.prover.bounded import settle_unknowns     # unknowns: a bounded search may refute them
    settle_unknowns(total, variant, op, module)
    for v in _stamp(total, sha).values():
        if v.status is Status.PROVEN and v.scope != ALL_DIMS and not (v.scope or "").startswith("cases:"):
            v.status, v.reason, v.scope = Status.UNKNOWN, f"a proof without a valid scope ({v.scope})", None
    return Proof(total, budget.summary(), budget.record(sha, CHECKER_VERSION))


def _check_assembly(total: dict[str, PropertyVerdict], variant: Variant, ptx: str) -> None:
    """A proof is kept only if the sm_90 assembler leaves the entries' code unrelocated (checker/ptx/toolchain.py),
    where the variant's source is at hand and gives these PTX bytes."""
    if not any(v.status is Status.PROVEN for v in total.values()) or getattr(variant, "library", ""):
        return
    try:
        source = variant.source_path.read_text()
    except (AttributeError, ValueError, OSError):   # PTX without its source: the name rule (toolchain.hazards)
        return                                      # is all there is
    try:
        found = toolchain.assembled_hazards(ptx, source, variant.source_path.name, variant.options)
    except Exception as e:            # unchecked is not proven
        found = [f"the cubin could not be checked: {type(e).__name__}: {e}"]
    for v in total.values():
        if found and v.status is Status.PROVEN:
            v.status, v.scope, v.reason = Status.UNKNOWN, None, "toolchain hazard: " + "; ".join(found)


def _prove_launch(variant, op, module, launch, timeout_ms, budget, n=0) -> dict[str, PropertyVerdict]:
    kernel = module.kernel(launch.entry)
    env = LaunchEnv(variant, op, module, launch)
    ta = Executor(kernel, module, env, "A").run_kernel()
    tb = Executor(kernel, module, env, "B").run_kernel()
    if len(ta.accesses) != len(tb.accesses) or len(ta.branches) != len(tb.branches):
        raise Unsupported("the two symbolic threads disagree")
    _untag_foreign(ta.accesses + tb.accesses, env.buffers)
    base = env.constraints + env.thread_constraints("A") + env.thread_constraints("B")
    core = len(base)                # the launch's own constraints: in every integer query (slicing.py)
    base += ta.defs + tb.defs
    if any(ins.op == "wgmma" for ins in kernel.instrs):
        from kreg.checker.prover.semantics import shared_window
        base += shared_window(env.buffers)
    th = _Threads(env)
    base += _ballots(ta, tb, th) + _popc_order(ta, tb)
    ticketed = _tickets(ta, tb, th, env, variant, base)
    base += ticketed
    approx = ta.approx | tb.approx
    solver = BvSolver(base, timeout_ms, budget)
    solver.ints = IntSolver(base, budget, core)
    cases = {name: c for name, c in op.cases.items()}

    caveats = _caveats(ta.obligations, solver)
    bufs = env.buffers
    queries: dict[str, list[_Q]] = {p: [] for p in PROPS}
    just, per_case = _justify(solver, ta.accesses, env, cases, singles=any(a.async_read for a in ta.accesses))
    disjoint = _disjoint(bufs)
    _in_bounds(queries["in_bounds"], ta.accesses, just, bufs, env, disjoint)
    _read_only(queries["read_only"], ta.accesses, just, bufs, disjoint)
    if any(is_warp_sync(ins) for ins in kernel.instrs):
        v = _decide("warp", _sync_queries(ta, tb, th, warp=True), solver, env, {}, approx)
        th.warp_sync = v.proven_for_all_dims
    _races(queries["race_free"], ta.accesses, tb.accesses, just, bufs, disjoint, th, solver)
    _noncoherent(queries["race_free"], ta.accesses, tb.accesses, just, bufs, disjoint)
    wg_only = _warpgroup_branches(kernel)
    queries["barrier_safe"] = _sync_queries(ta, tb, th, warp=False, wg_only=wg_only) + _collective_queries(ta, tb, th)

    out = {p: _decide(p, queries[p], solver, env, cases, approx) for p in PROPS}
    if out["in_bounds"].status != "refuted":      # alignment is part of in_bounds (its reasons say "misaligned")
        aligned = _decide("in_bounds", _aligned(ta.accesses, bufs), solver, env, cases, approx, bits=True)
        out["in_bounds"] = _worse(out["in_bounds"], aligned)
    budget.settled({p for p in PROPS if out[p].status is Status.UNKNOWN})
    _dependencies(out, kernel, ta.accesses, bufs, just)
    if ticketed:       # the tickets hold while only the atomics touch their counter: until a first stray access
        for p in ("read_only", "race_free"):
            out[p] = _rely(out[p], out["in_bounds"], "every access being inside its buffer (atomic tickets)")
    if per_case:         # some buffer attributions hold for the named cases only
        for p in PROPS:
            if out[p].proven_for_all_dims:
                out[p].scope = "cases:" + ",".join(cases)
                out[p].reason = "an access is proven inside its buffer for each named case only"
    if caveats:
        for p in PROPS:
            if out[p].status is Status.PROVEN:
                out[p] = PropertyVerdict(Status.UNKNOWN, None, "loop summary not justified: " + "; ".join(caveats[:3]))
    _replay_witnesses(out, variant, op, module, n)
    return out


def _ballots(ta, tb, th) -> list:
    """A full-mask ballot that every thread runs once (checker/prover/semantics.py: _ballot) gives the threads
    of one warp one value."""
    return [z3.Implies(th.same_warp, va == vb) for ia, va in ta.ballots for ib, vb in tb.ballots if ia == ib]


def _tickets(ta, tb, th, env, variant, base) -> list:
    """Constraints on the values an atomic counter hands out (checker/prover/semantics.py: _ticket), for a
    counter (a buffer with a `values` range for its initial contents, in a single-launch variant) whose only
    access in the launch is one such atomic at one fixed address, each thread running it at most once: the
    n-th atomic in the launch returns init + n * inc, so two threads get distinct values, init <= t < init
    + inc * E where E, the number of threads that run it, is at most every bound L found such that each of
    them has a global linear index below L (distinct threads, distinct indices); only where init + inc * L
    cannot wrap. [] where any of this is not shown (the values stay arbitrary)."""
    out = []
    if len(variant.launches) != 1 or not ta.tickets:
        return out
    for n, (ia, t_a, pc_a, tag, addr, inc, w) in enumerate(ta.tickets):
        ib, t_b, pc_b = tb.tickets[n][:3]
        buf = env.buffers.get(tag)
        if ib != ia or buf is None or buf.kind != "param" or buf.values is None or \
                sum(1 for x in ta.tickets if x[3] == tag) != 1:
            continue
        if any(a.buffer in (tag, None, "?") and not (a.kind == "atomic" and a.instr.index == ia) for a in ta.accesses):
            continue       # another access of the counter (or one that may be): the tickets are not the whole story
        if not z3.is_bv_value(z3.simplify(addr - buf.base)):
            continue
        W, GW = env.W, env.W + 96           # GW: no product of the launch's sizes wraps
        cons = [*env.constraints, *env.thread_constraints("A"), *ta.defs]
        lo, hi = buf.values
        tid, cta = env.thread("A")
        z = lambda x: z3.ZeroExt(GW - x.size(), x)       # noqa: E731
        nthreads = z(env.block[0]) * z(env.block[1]) * z(env.block[2])
        g = (z(cta[0]) + z(cta[1]) * z(env.grid[0]) + z(cta[2]) * z(env.grid[0]) * z(env.grid[1])) * nthreads \
            + z(tid[0]) + z(tid[1]) * z(env.block[0]) + z(tid[2]) * z(env.block[0]) * z(env.block[1])
        cands = list(env.dims.values()) + [z3.UDiv(b.size, b.elem_bits // 8) for b in env.buffers.values()
                                           if b.kind == "param" and b.elem_bits >= 8]
        bounds = [L for L in cands if always(env.constraints, z3.And(lo >= 0, L >= 0, z3.ULE(
                      z(hi) + inc * z(L), 1 << w))) and always(cons, z3.Implies(pc_a, z3.ULT(g, z(L))))]
        if not bounds or W < w + 2:
            continue
        init = z3.BitVec(f"ticket_init{ia}", W)
        count = z3.BitVec(f"ticket_count{ia}", W)
        out += [lo <= init, init <= hi] + [z3.ULE(count, L) for L in bounds]
        ks = []
        for t, sfx in ((t_a, "A"), (t_b, "B")):
            k = z3.BitVec(f"ticket_k{ia}@{sfx}", W)
            ks.append(k)
            out += [z3.ULT(k, count), z3.ZeroExt(W - w, t) == init + inc * k]
        out.append(z3.Implies(z3.And(th.distinct, pc_a, pc_b), ks[0] != ks[1]))
    return out


def _popc_order(ta, tb) -> list:
    """Facts of popcount (true of any values) for the two threads' popc of one instruction: a subset of the
    bits counts no more, a proper subset fewer (the ranks a ballot's prefix masks give lanes differ)."""
    out = []
    for ia, a, ra in ta.popcs:
        for ib, b, rb in tb.popcs:
            if ia != ib:
                continue
            for x, rx, y, ry in ((a, ra, b, rb), (b, rb, a, ra)):
                sub = x & ~y == 0
                out += [z3.Implies(sub, z3.ULE(rx, ry)), z3.Implies(z3.And(sub, x != y), z3.ULT(rx, ry))]
    return out


def _caveats(obligations, solver) -> list[str]:
    """Loop-summary obligations that may fail: if any, no "proven" is justified."""
    out = []
    for f, why in obligations:
        if solver.ints.refutes(f, max(200, solver.timeout_ms // 6)):
            continue
        r, _, msg = solver.check(f, answer_only=True)
        if r != "unsat":
            out.append(why + ("" if r == "sat" else f" ({msg})"))
    return out


def _replay_witnesses(out, variant, op, module, n) -> None:
    for p, v in out.items():
        if v.witness is None:
            continue
        v.witness["launch"] = n
        try:
            v.replay = replay(variant, op, module, p, v.witness)
        except Exception as e:       # a replay problem never changes a verdict
            v.replay = "not-run"
            v.reason = f"{v.reason}; replay failed: {type(e).__name__}: {e}"
        if v.status is Status.UNKNOWN and v.replay == "confirmed":
            v.status = Status.REFUTED
            v.reason = f"{v.reason}; the emulator replay of the witness confirms it"


def _dependencies(out, kernel, accs, bufs, just) -> None:
    """Weaken proofs that rely on what is not proven (as widely): race freedom on barrier safety;
    everything on inputs being read-only (their values are the same for every thread); and on the
    values read from inputs being those inputs' elements, i.e. on those reads being inside them.
    Barrier safety without block barriers holds whatever the values."""
    has_bar = any(is_block_collective(ins) for ins in kernel.instrs)
    if has_bar:
        out["race_free"] = _rely(out["race_free"], out["barrier_safe"], "barrier safety")
    deps = ("read_only", "race_free", "barrier_safe") if has_bar else ("read_only", "race_free")
    blind = [a for n, a in enumerate(accs) if a.kind == "read" and n not in just
             and bufs.get(a.buffer) is not None and bufs[a.buffer].role == "in"]
    if blind:
        for p in deps:
            if out[p].status is Status.PROVEN:
                out[p] = PropertyVerdict(Status.UNKNOWN, None, "relies on values read from an input, a read not proven "
                                 f"inside that input (line {blind[0].instr.line})")
    if any(bufs.get(a.buffer) is not None and bufs[a.buffer].role == "in" for a in accs):
        for p in ("in_bounds",) + deps[1:]:
            out[p] = _rely(out[p], out["read_only"], "input buffers being read-only")


def _rely(v: PropertyVerdict, dep: PropertyVerdict, what: str) -> PropertyVerdict:
    """v, for a proof that relies on dep: unknown where dep is not proven, no wider than dep's scope."""
    if v.status is not Status.PROVEN or dep.status is Status.PROVEN and (dep.scope == ALL_DIMS or dep.scope == v.scope):
        return v
    if dep.status is Status.PROVEN and v.scope == ALL_DIMS:
        return PropertyVerdict(Status.PROVEN, dep.scope, f"relies on {what}, proven for each named case only")
    return PropertyVerdict(Status.UNKNOWN, None, f"relies on {what}, which is not proven" +
                   (" for all dims" if dep.status is Status.PROVEN else ""))


class _Threads:
    """How the two symbolic threads A and B relate."""

    def __init__(self, env):
        (tid_a, cta_a), (tid_b, cta_b) = env.thread("A"), env.thread("B")
        self.same_block = z3.And(*[cta_a[i] == cta_b[i] for i in range(3)])
        self.distinct = z3.Or(z3.Not(self.same_block), *[tid_a[i] != tid_b[i] for i in range(3)])
        self.distinct_in_block = z3.And(self.same_block, z3.Or(*[tid_a[i] != tid_b[i] for i in range(3)]))
        bx, by = env.block[0], env.block[1]

        def lin(t):
            return t[0] + t[1] * bx + t[2] * bx * by      # < 1024: no wrap
        self.same_warp = z3.And(self.same_block, z3.LShR(lin(tid_a), 5) == z3.LShR(lin(tid_b), 5))
        self.same_warpgroup = z3.And(self.same_block, z3.LShR(lin(tid_a), 7) == z3.LShR(lin(tid_b), 7))
        self.same_thread = z3.And(self.same_block, *[tid_a[i] == tid_b[i] for i in range(3)])
        self.warp_sync = False      # full-mask bar.warp.sync proven to be executed convergently

    def unordered(self, a, b2, shared):
        """No barrier orders access a of A and b2 of B. Accesses in different block-barrier epochs are
        ordered within a block (barrier safety makes the epochs line up); a cp.async shared write spans
        the epochs from its issue to the wait that completes it (Access.end), so it is unordered with
        every access of another thread of the block in that span. Two threads of one warp in different
        warp-sync counts are ordered too, once every full-mask bar.warp.sync is known to be reached by
        the whole warp alike (the n-th sync of A is the n-th of B, and orders memory among them)."""
        if a.end is None and b2.end is None:
            same = a.epoch == b2.epoch
        else:
            same = z3.And(z3.ULE(a.epoch, _end(b2)), z3.ULE(b2.epoch, _end(a)))
        if self.warp_sync and a.end is None and b2.end is None:
            same = z3.And(same, z3.Not(z3.And(self.same_warp, a.wepoch != b2.wepoch)))
        return z3.And(self.same_block, same) if shared else z3.Or(z3.Not(self.same_block), same)

    def own_pending(self, a, b2):
        """A and B are one thread and one of the two accesses is a cp.async write of it still pending at
        the other (issued before it, by the thread's async count, and not yet completed by a wait): the
        thread's own access is not ordered with its own copy. Never an access against itself (the same
        instruction needs another loop iteration)."""
        cases = []
        for w, r in ((a, b2), (b2, a)):
            if w.end is not None:
                cases.append(z3.And(z3.ULE(w.aseq, r.aseq), z3.ULT(r.aseq, w.aseq_end)))
        if not cases:
            return z3.BoolVal(False)
        other = z3.BoolVal(True)
        if a.instr.index == b2.instr.index:
            other = z3.Or(*[u != v for u, v in zip(a.loop_ks, b2.loop_ks)]) if a.loop_ks else z3.BoolVal(False)
        return z3.And(self.same_thread, other, z3.Or(*cases))


def _end(a):
    return a.epoch if a.end is None else a.end


def _collective_queries(ta, tb, th):
    """wgmma operands agree across the warpgroup: two threads of one warpgroup at the same instance of a
    wgmma (the same loop iterations, the same barrier epoch) with different descriptors."""
    qs = []
    for x, (ia, pca, ksa, epa, opa) in enumerate(ta.collectives):
        for y, (ib, pcb, ksb, epb, opb) in enumerate(tb.collectives):
            if ia.index != ib.index:
                continue
            ks = z3.And(*[u == v for u, v in zip(ksa, ksb)]) if x == y else z3.BoolVal(True)
            f = z3.And(pca, pcb, th.distinct_in_block, th.same_warpgroup, epa == epb, ks,
                       z3.Or(*[u != v for u, v in zip(opa, opb)]))
            qs.append(_Q(f, "wgmma descriptors differ within a warpgroup", {"branch": (_Site(ia), None)}))
    return qs


@dataclass
class _Site:
    instr: P.Instr


def _warpgroup_branches(kernel) -> frozenset:
    """Indices of the branches (and predicated ret/exit) from which a wgmma but no block barrier is reachable
    before they reconverge: wgmma .sync.aligned is collective over the warpgroup only, so such a branch need
    be uniform within each warpgroup (warpgroups may skip different wgmmas: no barrier count changes)."""
    if not any(ins.op == "wgmma" for ins in kernel.instrs):
        return frozenset()
    ipdom = exit_ipdom(kernel)
    coll, bar = sync_branches(kernel, ipdom, is_block_collective), sync_branches(kernel, ipdom, is_block_barrier)
    return frozenset(kernel.blocks[b].end - 1 for b in coll - bar)


def _sync_queries(ta, tb, th, warp, wg_only=frozenset()):
    """Every pair of dynamic instances of one branch (the same context: the same loop iterations)
    reached at the same barrier epoch (warp-sync count) by two threads of one block (warp; warpgroup where
    only wgmmas follow, wg_only), taken differently, with a barrier (warp sync, wgmma) before it reconverges."""
    qs = []
    for x, a in enumerate(ta.branches):
        for y, b2 in enumerate(tb.branches):
            if a.instr.index != b2.instr.index or not (a.warp if warp else a.block):
                continue
            ks = z3.And(*[u == v for u, v in zip(a.loop_ks, b2.loop_ks)]) if x == y else z3.BoolVal(True)
            if warp:
                f = z3.And(a.pc, b2.pc, th.same_warp, th.distinct, a.wepoch == b2.wepoch, ks, a.cond != b2.cond)
                what = "warp sync reachable under thread-dependent control flow within a warp"
            elif a.instr.index in wg_only:
                f = z3.And(a.pc, b2.pc, th.distinct_in_block, th.same_warpgroup, a.epoch == b2.epoch, ks,
                           a.cond != b2.cond)
                what = "wgmma reachable under control flow that differs within a warpgroup"
            else:
                f = z3.And(a.pc, b2.pc, th.distinct_in_block, a.epoch == b2.epoch, ks, a.cond != b2.cond)
                what = "barrier reachable under thread-dependent control flow"
            qs.append(_Q(f, what, {"branch": (a, b2)}))
    return qs


# ---- which buffer an access hits --------------------------------------------------------------------
# A pointer's tag (checker/prover/symbolic.py) names the buffer whose base it was computed from; it says
# nothing about the offset, which may be anything (a difference of two pointers passed through a
# shuffle or memory, say). So a tag is only trusted for an access proven to lie inside its buffer
# for all dims ("justified"): the buffers are distinct allocations that do not overlap, so such an
# access hits no other buffer. Every other access is attributed by its address: it may hit any
# buffer of its state space whose range it overlaps.

SPACE_KINDS = {"global": ("param", "scratch", "global-var"), "shared": ("shared",), "local": ("local",),
               "const": ("const",)}
GROUPS = (("param", "scratch", "global-var"), ("shared",), ("local",), ("const",))
AW = 66        # addresses and sizes compared without wrap-around


def _ext(e):
    return z3.ZeroExt(AW - e.size(), e) if e.size() <= AW else z3.Extract(AW - 1, 0, e)


def _range(b):
    lo = _ext(b.base)
    return lo, lo + _ext(b.size)


def _hits(a, b):
    """Access a overlaps buffer b."""
    lo, hi = _range(b)
    x = _ext(a.addr)
    return z3.And(z3.ULT(x, hi), z3.ULT(lo, x + a.width))


def _within(a, b):
    lo, hi = _range(b)
    x = _ext(a.addr)
    return z3.And(z3.ULE(lo, x), z3.ULE(x + a.width, hi))


def _untag_foreign(accs, bufs) -> None:
    """An access whose instruction names a state space keeps its tag only if the tagged buffer is of that space: a
    global pointer given to st.shared addresses shared memory at that offset, not the buffer (its provenance then
    says nothing: attributed by its address)."""
    for a in accs:
        b, kinds = bufs.get(a.buffer), SPACE_KINDS.get(a.space or a.instr.space)
        if b is not None and kinds is not None and b.kind not in kinds:
            a.buffer = None


def _disjoint(bufs):
    """Buffers of one state space are non-overlapping allocations (an assumption, see ASSUMPTIONS),
    but for extern shared arrays, which all are the dynamic shared memory."""
    out = []
    bs = list(bufs.values())
    for x, b in enumerate(bs):
        for c in bs[x + 1:]:
            if any(b.kind in g and c.kind in g for g in GROUPS) and not (b.dynamic and c.dynamic):
                (lb, hb), (lc, hc) = _range(b), _range(c)
                out.append(z3.Or(z3.ULE(hb, lc), z3.ULE(hc, lb)))
    return z3.And(*out)


def _candidates(a, bufs, just, n):
    """The buffers access n (a) may hit: its tag's buffer (and that buffer's aliases, for dynamic shared
    memory) if justified, else every buffer of its space (a generic address: every buffer)."""
    if n in just:
        b = bufs[a.buffer]
        return [b] + [c for c in bufs.values() if b.dynamic and c.dynamic and c is not b]
    kinds = SPACE_KINDS.get(a.space or a.instr.space)
    return [b for b in bufs.values() if kinds is None or b.kind in kinds]


def _inb(a, b, W):
    ww = max(W, 64) + 2
    off = z3.ZeroExt(ww - 64, a.addr - b.base)
    return z3.ULE(off + a.width, z3.ZeroExt(ww - W, b.size))


def _justify(solver, accs, env, cases, singles=False) -> tuple[set[int], bool]:
    """Indices of the accesses proven inside the buffer their tag names: for all dims, or (second
    result True) some for each named case only, so that what relies on them holds for those cases.
    singles (wgmma kernels): a global buffer of more than 8 accesses, or one whose accesses do not close at
    once, has them tried one by one, and the next buffers are still tried at once (disjunctions of many
    guarded tile loads drown the integer solver, one at a time each closes in a fraction of a second)."""
    qs = [(n, z3.And(a.pc, z3.Not(_inb(a, env.buffers[a.buffer], env.W))))
          for n, a in enumerate(accs) if env.buffers.get(a.buffer) is not None]
    if not qs:
        return set(), False
    groups: dict = {}
    for n, f in qs:
        groups.setdefault(accs[n].buffer, []).append((n, f))
    out, per_case, left, combine, direct = set(), False, [], True, []
    for name, group in groups.items():        # as in _decide: a buffer's accesses at once
        if singles and len(group) > 8 and env.buffers[name].kind != "shared":
            direct += group
            continue
        if combine and len(group) > 1:
            if _closes(solver, z3.Or(*[f for _, f in group]), env.buffers[name]):
                out |= {n for n, _ in group}
                continue
            if singles:
                direct += group
                continue
            combine = False
        left += group
    rest = _refute_together(solver, [f for _, f in left]) if left else set()
    out |= {n for x, (n, _) in enumerate(left) if x not in rest}      # refuted in a group
    for n, f in [left[x] for x in sorted(rest)] + direct:
        if solver.ints.refutes(f, max(200, solver.timeout_ms // 6)):
            out.add(n)
            continue
        r = solver.check(f, timeout_ms=max(200, solver.timeout_ms // 10), answer_only=True)[0]
        if r == "unsat":
            out.add(n)
        elif r == "unknown" and cases and all(solver.check(f, [env.dims[d] == v for d, v in c.items()],
                                        timeout_ms=solver.timeout_ms // 2, answer_only=True)[0] == "unsat"
                                        for c in cases.values()):
            out.add(n)
            per_case = True
    return out, per_case


def _in_bounds(qs, accs, just, bufs, env, disjoint):
    for n, a in enumerate(accs):
        b = bufs.get(a.buffer)
        if b is not None and b.kind == "global-var":
            qs.append(_Q(a.pc, f"access to undeclared global {b.name}", {"acc": [a], "buf": b}))
        elif n in just:
            continue
        elif b is not None:
            qs.append(_Q(z3.And(a.pc, z3.Not(_inb(a, b, env.W))), f"{a.kind} outside {b.name}",
                         {"acc": [a], "buf": b}))
        else:
            inside = z3.Or(*[_within(a, c) for c in _candidates(a, bufs, just, n)])
            qs.append(_Q(z3.And(a.pc, disjoint, z3.Not(inside)), "access through a pointer of unknown "
                         "provenance may leave every buffer", {"acc": [a], "unknown": True}))


def _aligned(accs, bufs) -> list[_Q]:
    """Every access at a multiple of its width (a vector access: of its whole width, ld.v4.f32 16 bytes), as the
    GPU requires (it faults otherwise): the address's low bits are zero. Buffers start aligned (ASSUMPTIONS: 256
    bytes for pointer params; variables as declared), so this holds for all dims only where the offsets do. A
    wgmma's shared footprint is a descriptor's reach, not an access of the thread: not checked here."""
    qs = []
    for a in accs:
        w = a.width
        if a.async_read or w <= 1 or w & (w - 1):
            continue
        low = z3.Extract(w.bit_length() - 2, 0, a.addr)
        qs.append(_Q(z3.And(a.pc, low != 0), f"misaligned {a.kind}: {w} bytes at an address not a multiple of {w}",
                     {"acc": [a], "buf": bufs.get(a.buffer), "bits": True}))
    return qs


def _worse(v: PropertyVerdict, w: PropertyVerdict) -> PropertyVerdict:
    """The weaker of two verdicts on one property: refuted before unknown before proven, and of two proofs
    the narrower scope."""
    if w.status < v.status or (w.status is v.status is Status.PROVEN and w.scope != ALL_DIMS):
        return w
    return v


def _read_only(qs, accs, just, bufs, disjoint):
    for n, a in enumerate(accs):
        if a.kind == "read":
            continue
        for c in _candidates(a, bufs, just, n):
            if c.role != "in":
                continue
            if n in just:
                qs.append(_Q(a.pc, f"{a.kind} to input {c.name}", {"acc": [a], "buf": c}))
            else:
                qs.append(_Q(z3.And(a.pc, disjoint, _hits(a, c)), f"{a.kind} whose address may fall in "
                             f"input {c.name}", {"acc": [a], "buf": c, "unknown": True}))


def _races(qs, ta, tb, just, bufs, disjoint, th, solver=None):
    """Pairs of instructions, at least one writing, not both atomic, on a common buffer. A pair on
    shared memory whose two barrier epochs can never be equal in one block (whatever the paths and
    addresses: a weaker formula than the pair's own) is ordered by a barrier and needs no query; that
    is decided once per pair of epoch terms (a handful per kernel: the terms are shared by all accesses
    between two barriers)."""
    ordered: dict[tuple, bool] = {}

    def apart(a, b2):
        # a pending cp.async write spans the epochs from its issue to its completing wait: the pair is
        # apart only when those spans cannot meet (th.unordered's condition without paths or addresses)
        key = (a.epoch.get_id(), _end(a).get_id(), b2.epoch.get_id(), _end(b2).get_id())
        if key not in ordered:
            meet = z3.And(z3.ULE(a.epoch, _end(b2)), z3.ULE(b2.epoch, _end(a)))
            ordered[key] = solver is not None and solver.ints.refutes(
                z3.And(th.same_block, meet), max(200, solver.timeout_ms // 10))
        return ordered[key]
    wgmma = any(a.async_read for a in ta)
    apart_bytes: dict[tuple, bool] = {}

    def disjoint_bytes(a, b2):
        # wgmma kernels: most shared pairs are async spans that meet in epochs (a copy in flight over several
        # steps, a wgmma read retired a step later) on different static stages: their addresses alone (two
        # threads of one block, nothing about paths or epochs) keep them apart, a cheap bitvector query
        key = (a.addr.get_id(), a.width, b2.addr.get_id(), b2.width)
        if key not in apart_bytes:
            ov = z3.And(z3.ULT(a.addr, b2.addr + b2.width), z3.ULT(b2.addr, a.addr + a.width))
            apart_bytes[key] = solver is not None and solver.check(
                z3.And(th.same_block, ov), timeout_ms=max(200, solver.timeout_ms // 20), answer_only=True)[0] == "unsat"
        return apart_bytes[key]
    proxied = []         # pairs ordered by barriers: only the async-proxy visibility is left to check
    by_instr: dict[int, list] = {}
    for n, (a, b2) in enumerate(zip(ta, tb)):
        by_instr.setdefault(a.instr.index, []).append((n, a, b2))
    idx = sorted(by_instr)
    for x, i in enumerate(idx):
        for j in idx[x:]:
            for na, a, _ in by_instr[i]:
                for nb, _, b2 in by_instr[j]:
                    if a.kind == "read" and b2.kind == "read":
                        continue
                    blockwide = a.kind == "atomic" and b2.kind == "atomic"
                    if blockwide and not (_block_scoped(a) or _block_scoped(b2)):
                        continue
                    # by symmetry of the two threads, B's access n is justified iff A's is
                    cb = {c.name for c in _candidates(b2, bufs, just, nb)}
                    for c in _candidates(a, bufs, just, na):
                        if c.name not in cb or c.kind in ("local", "const"):
                            continue
                        tagged = na in just and nb in just
                        proxy = [(w, r) for w, r in ((a, b2), (b2, a)) if w.vis is not None and r.async_read] \
                            if c.kind == "shared" else []
                        if c.kind == "shared" and apart(a, b2):
                            proxied += [(w, r, c, tagged) for w, r in proxy]
                            continue
                        if c.kind == "shared" and wgmma and disjoint_bytes(a, b2):
                            continue
                        if blockwide:       # atomic to each other within a block only: a race across blocks
                            if c.kind != "shared":
                                q = _race(a, b2, c, tagged, disjoint, th)
                                qs.append(_Q(z3.And(q.formula, z3.Not(th.same_block)), q.what + " (atomics of a "
                                             "narrower scope than the two threads)", q.info))
                            continue
                        qs.append(_race(a, b2, c, tagged, disjoint, th, proxy))
    # most are ordered by their epochs alone (the fence before the barrier): all of those at once, without
    # paths or addresses; else each with them
    if proxied and not (solver is not None and solver.ints.refutes(
            z3.Or(*[_unfenced(w, r, th) for w, r, _, _ in proxied]), max(200, solver.timeout_ms // 10))):
        qs += [_proxy_race(w, r, c, tagged, disjoint, th) for w, r, c, tagged in proxied]


def _noncoherent(qs, ta, tb, just, bufs, disjoint):
    """A non-coherent load (ld.global.nc, __ldg, ldu) of A on bytes that B writes at any time of the launch (B
    may be A itself; before or after the load, across barriers): the PTX ISA allows the non-coherent path only
    for memory that is read-only for the kernel's whole lifetime, and no barrier orders it after a write."""
    for na, r in enumerate(ta):
        if not r.noncoherent:
            continue
        readable = {c.name for c in _candidates(r, bufs, just, na) if c.kind in SPACE_KINDS["global"]}
        for nb, w in enumerate(tb):
            if w.kind == "read":
                continue
            for c in _candidates(w, bufs, just, nb):
                if c.name not in readable:
                    continue
                ov = z3.And(z3.ULT(r.addr, w.addr + w.width), z3.ULT(w.addr, r.addr + r.width))
                what = f"non-coherent load (ld.global.nc / __ldg) of {c.name}, which the launch writes"
                info = {"acc": [r, w], "buf": c}
                if na in just and nb in just:
                    qs.append(_Q(z3.And(r.pc, w.pc, ov), what, info))
                else:
                    qs.append(_Q(z3.And(r.pc, w.pc, ov, disjoint, _hits(r, c), _hits(w, c)), what + " (by address)",
                                 info | {"unknown": True}))


def _block_scoped(a) -> bool:
    """An atomic of .cta (or .cluster: clusters are not modelled, a cluster is taken as its block) scope: atomic with
    respect to the threads of its own block alone (PTX memory model: two operations are morally strong only where
    each one's scope includes the other's thread)."""
    return any(m in ("cta", "cluster") for m in a.instr.mods)


def _race(a, b2, c, tagged, disjoint, th, proxy=()):
    """a and b2 unordered (or one thread's own pending access against its other one), or, for each (w, r)
    in proxy, w not yet visible to the async proxy at r (_proxy_race's condition), on overlapping bytes."""
    ov = z3.And(z3.ULT(a.addr, b2.addr + b2.width), z3.ULT(b2.addr, a.addr + a.width))
    who = z3.And(th.unordered(a, b2, c.kind == "shared"), th.distinct)
    if a.end is not None or b2.end is not None:
        who = z3.Or(who, th.own_pending(a, b2))
    if proxy:
        who = z3.Or(who, *[_unfenced(w, r, th) for w, r in proxy])
    f = z3.And(a.pc, b2.pc, ov, who)
    info = {"acc": [a, b2], "buf": c}
    if tagged:
        return _Q(f, f"{a.kind}/{b2.kind} conflict on {c.name}", info)
    info["unknown"] = True
    return _Q(z3.And(f, disjoint, _hits(a, c), _hits(b2, c)), f"{a.kind}/{b2.kind} conflict on {c.name} "
              "(by address)", info)


def _proxy_race(w, r, c, tagged, disjoint, th):
    """A generic write w (of any thread of the block, r's own included) ordered before the wgmma read r
    (an epoch no later than r's issue) but not yet visible to the async proxy there: no fence.proxy.async
    of its thread after it landed, in an epoch before r's issue (a barrier between them)."""
    ov = z3.And(z3.ULT(w.addr, r.addr + r.width), z3.ULT(r.addr, w.addr + w.width))
    f = z3.And(w.pc, r.pc, ov, _unfenced(w, r, th))
    info = {"acc": [w, r], "buf": c}
    what = f"{w.kind} not made visible to the async proxy (fence.proxy.async) before a wgmma read of {c.name}"
    if tagged:
        return _Q(f, what, info)
    info["unknown"] = True
    return _Q(z3.And(f, disjoint, _hits(w, c), _hits(r, c)), what + " (by address)", info)


def _unfenced(w, r, th):
    return z3.And(th.same_block, z3.ULE(w.epoch, r.epoch), z3.ULE(r.epoch, w.vis))


GROUP = 8           # queries refuted together (one disjunction) before any is tried alone
ALL_AT_ONCE = 32    # up to this many queries are first tried all at once


def _refute_in_groups(solver, fs, timeout_ms) -> list[int]:
    """Indices (in order) of the formulas fs not refuted as part of a group: groups of GROUP formulas are
    tried as one disjunction each (its unsat refutes every member: one solver instead of many), a group
    that does not close is halved until its parts do or are single formulas (left to be tried alone)."""
    left, todo = [], [list(range(i, min(i + GROUP, len(fs)))) for i in range(0, len(fs), GROUP)][::-1]
    while todo:
        g = todo.pop()
        if len(g) == 1:
            left.append(g[0])
        elif not solver.ints.refutes(z3.Or(*[fs[i] for i in g]), timeout_ms):
            todo += [g[len(g) // 2:], g[:len(g) // 2]]
    return left


def _refute_together(solver, fs) -> set[int]:
    """Indices of the formulas fs not refuted together with others: all at once where there are few
    (a large disjunction rarely closes in time when its parts are not trivial), else in groups."""
    if len(fs) > 1 and len(fs) <= ALL_AT_ONCE and \
            solver.ints.refutes(z3.Or(*fs), max(200, solver.timeout_ms // 3)):
        return set()
    if len(fs) <= GROUP:
        return set(range(len(fs)))
    return set(_refute_in_groups(solver, fs, max(200, solver.timeout_ms // 6)))


def _by_buffer(qs) -> list[list]:
    """The queries grouped by the buffer they are about (in first-seen order; those about no buffer
    together)."""
    groups: dict = {}
    for q in qs:
        b = q.info.get("buf")
        groups.setdefault(None if b is None else b.name, []).append(q)
    return list(groups.values())


WGMMA_CHUNK = 32    # shared-memory queries of a wgmma kernel closed together by the bitvector solver


def _wgmma_chunks(solver, group, buf) -> list:
    """The queries of a shared buffer that wgmma reads (swizzled addresses: XOR, which the integer translation
    loses) in chunks of WGMMA_CHUNK, each one disjunction for the bitvector solver (a chunk that does not close
    is halved until its parts do or are single queries); the queries that do not close are returned (to be
    tried one by one). A query about two accesses in loops is split (its two parts together are the query):
    both in the same iterations of the loops around them (then the swizzled addresses keep them apart: the
    bitvector solver, as above), or in different ones (then the barrier epochs, sums of products of iteration
    counts, which the integer translation takes far better: all such parts at once, then in bisected groups,
    then one by one)."""
    plain, same, other = [], [], []
    for q in group:
        accs = q.info.get("acc", ())
        n = min(len(accs[0].loop_ks), len(accs[1].loop_ks)) if len(accs) == 2 else 0
        if n == 0:
            plain.append((q, q.formula))
            continue
        eq = z3.And(*[u == v for u, v in zip(accs[0].loop_ks[:n], accs[1].loop_ks[:n])])
        same.append((q, z3.And(q.formula, eq)))
        other.append((q, z3.And(q.formula, z3.Not(eq))))
    left = {}
    for fs in (plain, same):
        todo = [list(range(i, min(i + WGMMA_CHUNK, len(fs)))) for i in range(0, len(fs), WGMMA_CHUNK)][::-1]
        while todo:
            g = todo.pop()
            if _closes(solver, z3.Or(*[fs[i][1] for i in g]), buf, max(200, solver.timeout_ms // (3 if len(g) > 1 else 10))):
                continue
            if len(g) == 1:
                left[id(fs[g[0]][0])] = fs[g[0]][0]
            else:
                todo += [g[len(g) // 2:], g[:len(g) // 2]]
    if other:
        for i in sorted(_refute_together(solver, [f for _, f in other])):
            if not solver.ints.refutes(other[i][1], max(200, solver.timeout_ms // 6)):
                left[id(other[i][0])] = other[i][0]
    return [q for q in group if id(q) in left]


def _closes(solver, f, buf, ms=None, bits=False) -> bool:
    """f (a disjunction of one buffer's queries) is unsatisfiable. Shared-memory addresses are bit
    arithmetic on thread indices, which the bitvector solver takes natively; global ones products of
    dims, for which the integer translation exists. bits: questions about an address's low bits
    (alignment), the bitvector solver's too."""
    ms = ms or max(200, solver.timeout_ms // 3)
    if bits or buf is not None and buf.kind == "shared":
        return solver.check(f, timeout_ms=ms, answer_only=True)[0] == "unsat"
    return solver.ints.refutes(f, ms)


def _decide(prop, qs, solver, env, cases, approx, bits=False) -> PropertyVerdict:
    """One property's verdict from its queries (bits: they are about low address bits, alignment: the
    bitvector solver first, then the integer translation)."""
    with solver.budget.deciding(prop):
        pending: list = []
        v = _decide_queries(prop, qs, solver, env, cases, approx, bits, pending)
        if pending and v.status is not Status.REFUTED and not v.proven_for_all_dims and \
                _second_look([q for q, _ in pending], solver, bits):
            return PropertyVerdict(Status.PROVEN, ALL_DIMS, None)
        return v


SECOND_LOOK = 0.25      # of the variant's budget: the allowance of one property's second look


def _second_look(qs, solver, bits) -> bool:
    """Whether every query left open closes in a weaker form (slicing.weakenings: the atoms of loops and
    branches that share no fresh symbol with the rest dropped), a buffer's at once, then one by one, on an
    allowance of its own (Budget.allowance): what the properties decided after it get is what they got
    before, and a kernel proven without it is proven with the same work."""
    cone = solver.ints.cone
    with solver.budget.allowance(solver.budget.ms * SECOND_LOOK):
        for group in _by_buffer(qs):
            buf = group[0].info.get("buf")
            f = z3.Or(*[q.formula for q in group])
            if len(group) > 1 and any(_closes(solver, w, buf, bits=bits) for w in weakenings(f, cone)):
                continue
            for q in group:
                if solver.budget.spent() or not any(_closes(solver, w, buf, bits=bits)
                                                    for w in weakenings(q.formula, cone)):
                    return False
    return True


def _decide_queries(prop, qs, solver, env, cases, approx, bits, pending) -> PropertyVerdict:
    """The verdict from the queries; those left open (neither closed nor satisfied) are appended to pending."""
    left, combine = [], True
    # the queries of one buffer at once: one solver instead of many (all of a property's queries in one
    # disjunction drown a solver when a kernel has hundreds of shared-memory pairs); after one group that
    # does not close, the rest go one by one, so this costs at most one failed attempt, as before
    for group in _by_buffer(qs):
        buf = group[0].info.get("buf")
        if buf is not None and buf.kind == "shared" and any(a.async_read for q in group for a in q.info["acc"]):
            left += _wgmma_chunks(solver, group, buf)      # before the others: no failed attempt counted
            continue
        if combine and len(group) > 1:
            if _closes(solver, z3.Or(*[q.formula for q in group]), buf, bits=bits):
                continue
            combine = False
        left += group
    if not bits:
        rest = _refute_together(solver, [q.formula for q in left]) if left else set()
        left = [left[i] for i in sorted(rest)]      # then the rest in bisected groups (prefill)
    for q in left:
        if not bits and solver.ints.refutes(q.formula, max(200, solver.timeout_ms // 6)):
            continue
        r, model, msg = solver.check(q.formula, timeout_ms=max(200, solver.timeout_ms // 10))
        if r == "unsat" or r != "sat" and bits and solver.ints.refutes(q.formula, max(200, solver.timeout_ms // 6)):
            continue
        if r == "sat":
            return _violation(prop, q, _small_model(q, solver, env) or model, env, approx)
        pending.append((q, msg))
    if not pending:
        return PropertyVerdict(Status.PROVEN, ALL_DIMS, None)
    if not cases:
        q, msg = pending[0]
        return PropertyVerdict(Status.UNKNOWN, None, f"{q.what}: {msg}")
    # the all-dims query did not close: try each named case
    for q, msg in pending:
        for name, c in cases.items():
            fix = [env.dims[d] == v for d, v in c.items()]
            r, model, msg2 = solver.check(q.formula, fix, timeout_ms=solver.timeout_ms // 2)
            if r == "sat":
                return _violation(prop, q, model, env, approx, case=name)
            if r != "unsat":
                return PropertyVerdict(Status.UNKNOWN, None, f"{q.what}: {msg}; case {name}: {msg2}")
    return PropertyVerdict(Status.PROVEN, "cases:" + ",".join(cases), f"all-dims query did not close ({pending[0][1]}); "
                   "proven for each named case")


def _small_model(q, solver, env):
    """A model of q with small dims, if one is quickly found: a witness the emulator can replay."""
    for cap in (64, 1024):
        small = [z3.ULE(env.dims[d], max(lo, min(hi, cap))) for d, (lo, hi) in env.op.dims.items()]
        r, model, _ = solver.check(q.formula, small, timeout_ms=1000)
        if r == "sat":
            return model
    return None


def _violation(prop, q, model, env, approx, case=None) -> PropertyVerdict:
    w = witness(q, model, env)
    if case:
        w["case"] = case
    if q.info.get("unknown"):
        return PropertyVerdict(Status.UNKNOWN, None, q.what, w, "not-run")
    used = {str(x) for x in _vars(q.formula)}
    over = sorted(used & approx)
    if over:
        return PropertyVerdict(Status.UNKNOWN, None, f"possible violation ({q.what}), but the witness depends on "
                       f"over-approximated values ({', '.join(s.split('#')[0] for s in over[:4])})", w, "not-run")
    return PropertyVerdict(Status.REFUTED, None, q.what, w, "not-run")


def _vars(f):
    seen, out, todo = set(), set(), [f]
    while todo:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(e)
        todo += e.children()
    return out


def _num(model, e):
    v = model.value(e)
    return v.as_long() if hasattr(v, "as_long") else str(v)


def witness(q: _Q, model, env) -> dict:
    w = {"dims": {d: _num(model, s) for d, s in env.dims.items()}}
    threads = ("A", "B")
    w["blocks"], w["threads"] = [], []
    for t in threads:
        tid, cta = env.thread(t)
        w["blocks"].append([_num(model, x) for x in cta])
        w["threads"].append([_num(model, x) for x in tid])
    w["grid"] = [_num(model, x) for x in env.grid]
    w["block"] = [_num(model, x) for x in env.block]
    accs = q.info.get("acc") or []
    if "branch" in q.info:
        a, _ = q.info["branch"]
        w["instrs"] = [{"index": a.instr.index, "text": a.instr.text.strip()}]
    else:
        w["instrs"] = [{"index": a.instr.index, "text": a.instr.text.strip()} for a in accs]
        w["threads"] = w["threads"][:max(len(accs), 1)]
        w["blocks"] = w["blocks"][:max(len(accs), 1)]
    buf = q.info.get("buf")
    if buf is not None:
        w["buffer"] = buf.name
        w["buffer_bytes"] = _num(model, buf.size)
        w["addresses"] = [{"offset": _signed(_num(model, a.addr - buf.base)), "bytes": a.width, "kind": a.kind}
                          for a in accs]
    return w


def _signed(v):
    return v - (1 << 64) if isinstance(v, int) and v >= 1 << 63 else v


__all__ = ["CHECKER_VERSION", "Proof", "PropertyVerdict", "WallClockStop", "prove", "prove_variant", "PROPS", "AXES"]
