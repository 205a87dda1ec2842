"""The verify pipeline: compile -> prove -> numerics -> speed -> decide, for one variant. Each stage runs
in its own child process (kreg.isolate) with a time and a memory limit, one after the other, never
nested, and each result is written to the store as soon as it is decided. Several variants may run at
once: on the GPU their children share one turn (gpu_turn), so a variant is timed alone while the others'
host-side work goes on. A stage that could not run because of the environment (no GPU, an unwritable
cache) is an environment error, never a verdict on the kernel."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from kreg import __version__, isolate
from kreg.registry import preflight
from kreg.registry.catalog import Entry
from kreg.registry import trust
from kreg.registry.results import PROPS, PropertyVerdict, Status, VariantReport, proof_payload
from kreg.registry.schema import Op, narrowed, skipped_cases
from kreg.registry.store import Store

# The stages that never touch a GPU run in children of a fork server (kreg.isolate): a fresh interpreter started
# once per process, that imports these modules and forks each child from that state, so a stage's child costs no
# interpreter start and no imports. A GPU stage's child is spawned (CUDA is initialised in it, never inherited).
CPU_CHILD = {"start": "forkserver", "preload": (__name__, "kreg.checker.prover.prove")}

MAX_REASONS = 12


@dataclass(frozen=True)
class Options:
    """What verify runs. On the CPU: named cases whose buffers fit cpu_case_bytes, plus `ragged`
    seeded shapes that fit cpu_ragged_bytes; on the GPU: every named case (up to gpu_case_bytes if set)
    plus `ragged` seeded shapes that fit gpu_ragged_bytes and `ragged` more of at least 1/64 of it,
    and the speed of every named case. Limits: compile_timeout_s for NVRTC, the prover's budget
    (prove_budget_ms of solver work; killed after checker.prove.hard_limit_s), timeout_s for
    conformance, memory_mb for every stage."""
    seed: int = 0
    ragged: int = 3
    cpu_case_bytes: int = 256 << 10
    cpu_ragged_bytes: int = 64 << 10
    gpu_ragged_bytes: int = 64 << 20
    gpu_case_bytes: int | None = None
    speed: bool = True
    prove: bool = True
    prove_timeout_ms: int = 10_000
    prove_budget_ms: int | None = None      # the whole variant's proof, in ms of solver work on the reference
                                            # machine (None: the variant's own, `proof: {budget_ms}`, default 30 s)
    speed_cases: str = "all"                # "all" named cases, or only the "largest" (most bytes moved)
    preconditions: bool = False             # search the weakest precondition where a property is not proven
    timeout_s: float = 300.0
    compile_timeout_s: float = 60.0
    memory_mb: int = int(os.environ.get("KREG_MEMORY_MB", 20480))   # GPU cases hold GB-sized inputs on the host


def report(entry: Entry) -> VariantReport:
    v = entry.variant
    return VariantReport(v.op, v.name, v.safety, entry.hash, dict(v.types))


def choose_cases(op: Op, variant, device: str, opts: Options) -> dict[str, dict[str, int]]:
    from kreg.conformance.shapes import named_cases, ragged_dims
    named = named_cases(op, variant, opts.cpu_case_bytes if device == "cpu" else opts.gpu_case_bytes)
    budget = opts.cpu_ragged_bytes if device == "cpu" else opts.gpu_ragged_bytes
    extra = ragged_dims(op, variant, opts.ragged, budget, seed=opts.seed)
    if device == "gpu":   # and a few large ones: many blocks, then a ragged tail
        extra += [d for d in ragged_dims(op, variant, opts.ragged, budget, seed=opts.seed + 1, min_bytes=budget // 64)
                  if d not in extra]
    return named | {"seeded-" + "-".join(f"{k}{v}" for k, v in d.items()): d for d in extra}


# ---- the stages: each a plain function of plain data, run in a child --------------------------------

def compile_stage(variant) -> tuple[str, str]:
    from kreg.checker.ptx.compile import compile_cuda
    c = compile_cuda(variant.source_path.read_text(), variant.source_path.name, variant.options)
    return c.ptx, c.sha256


def prove_stage(variant, op: Op, ptx: str, timeout_ms: int, budget_ms: int | None, record=None) -> dict:
    from kreg.checker.prover.prove import prove_json      # this child is the proof's isolation
    return prove_json(variant, op, ptx, timeout_ms, budget_ms, record)


def preconditions_stage(variant, op: Op, ptx: str, verdicts: dict, timeout_ms: int, budget_ms: int) -> dict:
    """checker/prover/preconditions.py's search; {"undecided": why} where a clock guard stopped a proof."""
    from kreg.checker.prover import preconditions
    from kreg.checker.prover.prove import WallClockStop, prove_variant
    given = {p: PropertyVerdict.from_json(d) for p, d in verdicts.items()}
    try:
        got = preconditions.search(variant, op, ptx, given, lambda v, o, x: prove_variant(
            v, o, x, timeout_ms=timeout_ms, budget_ms=budget_ms, isolate=False))
    except WallClockStop as e:
        return {"undecided": str(e)}
    return got.to_json()


def numerics_stage(variant, op: Op, ptx: str, device: str, opts: Options, turn=None, cases=None) -> dict:
    """cases: choose_cases(op, variant, device, opts), where the caller has them already."""
    _yield_to_proofs()
    from kreg.conformance.harness import open_harness
    from kreg.conformance.numerics import run_numerics
    try:
        dev = open_harness(device, turn)
    except RuntimeError as e:
        return {"environment": f"cannot open the {device} device: {e}"}
    cases = cases if cases is not None else choose_cases(op, variant, device, opts)
    num = run_numerics(dev, ptx, variant, op, cases, seed=opts.seed)
    return {"numerics": num.status, "device_detail": num.device or dev.describe(),
            "cases_run": [f"{c.case} {c.dims}" for c in num.cases],
            "numerics_detail": [c.as_json() for c in num.cases], "failures": num.failures(),
            "not_run_reason": num.reason if num.status == "not-run" else None}


_yielded = False


def _yield_to_proofs() -> None:
    """Numerics and speed run at a lower CPU priority than proofs: their thread pools would otherwise
    starve z3 of the cores, and a proof still has a wall-clock budget per variant. Once per process (a
    long-lived pool worker would otherwise sink to the lowest priority, 19, one variant after another)."""
    global _yielded
    if _yielded:
        return
    _yielded = True
    try:
        os.nice(10)
    except OSError:
        pass


def speed_stage(variant, op: Op, ptx: str, opts: Options, turn=None) -> dict:
    _yield_to_proofs()
    from kreg.conformance.harness import open_harness
    from kreg.conformance.shapes import named_cases
    from kreg.conformance.speed import measure
    timed = named_cases(op, variant, opts.gpu_case_bytes)
    if opts.speed_cases == "largest":    # the case moving the most bytes: the one the targets name
        big = max(timed, key=lambda c: op.traffic_bytes(timed[c], variant.types))
        timed = {big: timed[big]}
    return measure(open_harness("gpu", turn), ptx, variant, op, timed)


_gpu_turn: isolate.Turn | None = None


def gpu_turn() -> isolate.Turn:
    """The one turn on the GPU that this process's children share: numerics take it for each use of the
    GPU, a timed case for the whole measurement (so it runs alone), host-side work needs none."""
    global _gpu_turn
    if _gpu_turn is None:
        _gpu_turn = isolate.Turn()
    return _gpu_turn


# ---- the pipeline -----------------------------------------------------------------------------------

def verify_variant(entry: Entry, op: Op, device: str, opts: Options | None = None, record=None,
                   known_proof=None, known_record=None) -> VariantReport:
    """Every stage of one variant. record(stage, report), if given, is called as each stage is decided
    (the store writes it then). known_proof(ptx_sha256), if given, returns the stored verdicts of a
    proof of this PTX by the current checker that decided all four properties (proofs are
    device-independent), which are reused instead of proving again; known_record(ptx_sha256), if given, a proof
    record of this PTX (checker/prover/records.py: it makes the proof faster, never decides it; default:
    the one shipped with the built-in registry). report.complete says whether every stage was decided (not skipped, timed
    out, interrupted or kept from running by the environment): only a complete verdict is worth storing."""
    opts = opts or Options()
    v = entry.variant
    res = report(entry)
    res.reasons += [f"case {n} skipped: {why}" for n, why in skipped_cases(op, v).items()]
    op = narrowed(op, v)               # the op's requirements and the variant's own
    record = record or (lambda stage, res: None)

    cases = choose_cases(op, v, device, opts)          # seeded: the same dims each time they are chosen
    refused = preflight.geometry(v, op, cases)          # before any work
    if refused:
        res.numerics, res.complete = "fail", True
        res.reasons += [f"launch: {w}" for w in refused[:MAX_REASONS]]
        res.verdict = verdict(res)
        return res

    if v.vendor:                       # a library routine: nothing to compile or prove
        if device != "gpu":
            res.environment_error = f"{v.library} runs on the GPU only (--device gpu)"
            return _decide(res, isolate.Outcome("ok"))
        ptx, res.ptx_sha256 = None, f"vendor:{v.library}"
        why = f"a {v.library} routine: no source to prove"
        res.proofs = {p: PropertyVerdict.from_json({"status": "unknown", "reason": why}) for p in PROPS}
        res.reasons.append(f"checker: not run ({why}); the verdict is at most unverified")
        return _conform(res, v, op, None, device, opts, record, cases)

    got = isolate.run(compile_stage, v, timeout_s=opts.compile_timeout_s, memory_mb=opts.memory_mb, **CPU_CHILD)
    res.seconds["compile"] = round(got.seconds, 2)
    if got.status == "memory":
        _memory_limit(res, "compile", got, opts)
        return _decide(res, got)
    if not got.ok:
        res.reasons.append(_failed("compile", got))
        res.complete = got.status == "error"              # a compile error is a verdict; a hang may be the machine
        return _decide(res, got)
    ptx, res.ptx_sha256 = got.value
    refused = preflight.resources(v, op, cases, ptx)   # before the prover reads it
    if refused:
        res.numerics, res.complete = "fail", True
        res.reasons += [f"limits: {w}" for w in refused[:MAX_REASONS]]
        res.verdict = verdict(res)
        return res

    reused = known_proof(res.ptx_sha256) if known_proof and opts.prove else None
    if reused:
        _take_proofs(res, reused)
        res.proof_reused = True
    elif opts.prove:
        from kreg.checker.prover.prove import hard_limit_s
        budget = opts.prove_budget_ms or v.proof_budget_ms
        rec = known_record(res.ptx_sha256) if known_record else shipped_record(v.name)
        got = isolate.run(prove_stage, v, op, ptx, opts.prove_timeout_ms, budget, rec,
                          timeout_s=hard_limit_s(budget), memory_mb=opts.memory_mb, **CPU_CHILD)
        res.seconds["prove"] = round(got.seconds, 2)
        if got.status == "interrupted":
            return _decide(res, got)
        undecided = got.value.get("undecided") if got.ok else (
            f"the prover exceeded its hard wall-clock limit of {hard_limit_s(budget):.0f} s" if got.status == "timeout"
            else None)
        if undecided:              # the clock stopped it: the environment, never a verdict; nothing stored
            res.environment_error = (f"proof not decided: {undecided}; nothing was stored. Run with fewer --jobs, "
                                     "on a less loaded machine, or with a longer guard (KREG_PROVER_GUARD=3)")
            res.reasons.append(f"environment: {res.environment_error}")
            return _decide(res, got)
        if got.ok:
            _take_proofs(res, {p: PropertyVerdict.from_json(d) for p, d in got.value["verdicts"].items()})
            res.proof_work = got.value.get("work") or {}
            res.proof_record = got.value.get("record") or {}
            record("proof", res)
        else:
            res.reasons.append(_failed("checker", got) + "; proofs are unknown")
    else:
        res.reasons.append("checker: not run (--no-prove); proofs are unknown")
    if opts.preconditions and res.proofs and not all(vd.proven_for_all_dims for vd in res.proofs.values()):
        _preconditions(res, v, op, ptx, opts)
    return _conform(res, v, op, ptx, device, opts, record, cases)


def _preconditions(res: VariantReport, v, op: Op, ptx: str, opts: Options) -> None:
    """The precondition search in a child (at most preconditions.MAX_PROOFS proofs, each under its hard limit)."""
    from kreg.checker.prover.preconditions import MAX_PROOFS
    from kreg.checker.prover.prove import hard_limit_s
    budget = opts.prove_budget_ms or v.proof_budget_ms
    verdicts = {p: vd.to_json() for p, vd in res.proofs.items()}
    got = isolate.run(preconditions_stage, v, op, ptx, verdicts, opts.prove_timeout_ms, budget,
                      timeout_s=MAX_PROOFS * hard_limit_s(budget), memory_mb=opts.memory_mb, **CPU_CHILD)
    res.seconds["preconditions"] = round(got.seconds, 2)
    if got.ok and "undecided" not in got.value:
        res.preconditions = got.value
        if got.value["found"]:
            res.reasons.append(f"preconditions: safe if {got.value['says']} (proven: requires "
                               f"{'; '.join(got.value['requires'])})")
        else:
            res.reasons.append(f"preconditions: none of {len(got.value['tried'])} candidates tried makes every "
                               "property proven")
    else:
        why = got.value["undecided"] if got.ok else got.error
        res.reasons.append(f"preconditions: search not finished ({why})")


def _conform(res: VariantReport, v, op: Op, ptx: str | None, device: str, opts: Options,
             record=lambda stage, res: None, cases=None) -> VariantReport:
    """Numerics, then (on the GPU) speed, each in a child; the verdict."""
    turn = gpu_turn() if device == "gpu" else None
    got = isolate.run(numerics_stage, v, op, ptx, device, opts, turn, cases, timeout_s=opts.timeout_s,
                      memory_mb=opts.memory_mb, **(CPU_CHILD if device == "cpu" else {}))
    res.seconds["numerics"] = round(got.seconds, 2)
    decided = False
    if got.status == "interrupted":
        return _decide(res, got)
    if got.status == "memory":         # the host's limit on the harness (its float64 references and
        _memory_limit(res, "numerics", got, opts)   # buffers), not the kernel's doing: nothing decided
    elif got.status == "timeout":      # the wall clock: a loaded machine as much as the kernel, never a verdict
        _time_limit(res, "numerics", got, device)
    elif not got.ok:
        res.numerics = "fail" if got.status == "died" else "not-run"
        res.reasons.append(_failed("conformance", got))
        decided = got.status == "died"                   # the kernel crashed its process
    elif "environment" in got.value:
        res.environment_error = got.value["environment"]
        res.reasons.append(f"environment: {got.value['environment']}; numerics not run")
    else:
        _take_numerics(res, got.value)
        decided = res.numerics in ("pass", "fail")
        if decided:
            record("numerics", res)
    if res.numerics == "pass" and device == "gpu" and opts.speed:
        got = isolate.run(speed_stage, v, op, ptx, opts, turn, timeout_s=opts.timeout_s, memory_mb=opts.memory_mb)
        res.seconds["speed"] = round(got.seconds, 2)
        if got.status == "interrupted":
            return _decide(res, got)
        if got.ok:
            _take_speed(res, got.value)
        elif got.status == "memory":
            _memory_limit(res, "speed", got, opts)
            decided = False
        else:
            res.reasons.append(_failed("speed", got))
            decided = False
    res.complete = res.proofs is not None and decided
    return _decide(res, got)


def verify_in_process(entry: Entry, op: Op, device: str, opts: Options | None = None) -> VariantReport:
    """verify_variant with every stage in this process: for worker processes of a pool that are
    disposable already (the project's own tests); no time or memory limit."""
    isolate.mark_isolated()
    return verify_variant(entry, op, device, opts)


def _decide(res: VariantReport, got: isolate.Outcome) -> VariantReport:
    if got.status == "interrupted":
        res.interrupted = True
        res.environment_error = got.error
        res.reasons.append(f"not finished: {got.error}")
    res.verdict = verdict(res)
    return res


def _not_decided(res: VariantReport, stage: str, got: isolate.Outcome, cause: str, advice: str) -> None:
    """A stage's child stopped by a limit of the machine's: an environment error, never a verdict, nothing stored."""
    res.environment_error = f"{stage} not decided: the child {got.error} ({cause}); nothing was stored. {advice}"
    res.reasons.append(f"environment: {res.environment_error}")


def _memory_limit(res: VariantReport, stage: str, got: isolate.Outcome, opts: Options) -> None:
    """Killed at the host-memory limit: the machine (a limit set too low for the cases the harness holds)."""
    _not_decided(res, stage, got, f"KREG_MEMORY_MB={opts.memory_mb}", "Raise KREG_MEMORY_MB or run fewer --jobs at once")


def _time_limit(res: VariantReport, stage: str, got: isolate.Outcome, device: str) -> None:
    """Killed at its wall-clock limit: a loaded machine or large cases' float64 references as much as a kernel
    that hangs. On the CPU a kernel that loops forever is rejected by the emulator's step budget (steps, not s)."""
    hang = ("the emulator's step budget rejects a kernel that loops forever" if device == "cpu"
            else "a kernel that never finishes is not decided either")
    _not_decided(res, stage, got, f"a loaded machine, large cases, or a hung kernel: {hang}",
                 "Raise --timeout or run fewer --jobs at once")


def _failed(stage: str, got: isolate.Outcome) -> str:
    return f"{stage}: {got.error}" + (" (a hung kernel, or more work than the limit allows: large cases' float64 "
                                      "references; --timeout raises it)" if got.status == "timeout" else "")


def _take_proofs(res: VariantReport, verdicts: dict[str, PropertyVerdict]) -> None:
    res.proofs = {p: verdicts.get(p) or PropertyVerdict(Status.UNKNOWN, reason="no verdict") for p in PROPS}
    for p, vd in res.proofs.items():
        if vd.status is Status.PROVEN and not vd.proven_for_all_dims:
            res.reasons.append(f"checker: {p} proven for {vd.scope} only, not for all dims in range")
        elif vd.status is not Status.PROVEN:
            res.reasons.append(f"checker: {p} {vd.status}: {vd.reason or 'no reason given'}")


def _take_numerics(res: VariantReport, out: dict) -> None:
    res.numerics = out["numerics"]
    res.device_detail, res.cases_run, res.numerics_detail = out["device_detail"], out["cases_run"], out["numerics_detail"]
    fails = out["failures"]
    res.reasons += [f"numerics: {f}" for f in fails[:MAX_REASONS]]
    if len(fails) > MAX_REASONS:
        res.reasons.append(f"numerics: ... and {len(fails) - MAX_REASONS} more (numerics_detail has all)")
    if out["not_run_reason"]:
        res.reasons.append(f"numerics: {out['not_run_reason']}")


def _take_speed(res: VariantReport, sp: dict) -> None:
    res.speed = sp
    if sp["above_roofline"]:
        res.reasons.append(f"speed: a case above the roofline (the device's DRAM peak, or 5% over the measured "
                           f"copy where the peak is unknown; largest case {sp['pct_of_copy_bw']:.0f}% of copy): a "
                           "broken kernel or a broken measurement, not a figure to report")


def verdict(res: VariantReport) -> str:
    """The report's verdict by the one trust rule (VariantReport.decide), with why it was rejected added
    to its reasons."""
    d = res.decide()
    if d.verdict == "rejected":
        if d.refuted:
            res.reasons.append(f"verdict: rejected because {', '.join(p + ' refuted' for p in d.refuted)}")
        elif d.numerics == "not-run":
            res.reasons.append("verdict: rejected because numerics did not run")
        elif d.numerics == "pass":
            res.reasons.append(f"verdict: a safe variant needs all four proofs for all dims; "
                               f"not proven: {', '.join(d.unproven)}")
    return d.verdict


def failed(r: VariantReport) -> bool:
    return r.verdict in ("rejected", "error") or r.numerics == "fail" or \
        bool((r.speed or {}).get("above_roofline"))


# ---- recording to the store (kreg verify and kreg submit) ------------------------------------------

def store_recorder(store: Store, e: Entry):
    """record(stage, report) for the pipeline: each stage into the store as it is decided."""
    def record(stage: str, r: VariantReport) -> None:
        if stage == "proof":
            payload = proof_payload(r.proofs) | ({"record": r.proof_record} if r.proof_record else {})
            store.put(variant_hash=e.hash, ptx_sha256=r.ptx_sha256, checker_version=r.checker_version,
                      stage="proof", op=e.op, name=e.name, tool_version=__version__, payload=payload)
        elif stage == "numerics":
            store.put(variant_hash=e.hash, ptx_sha256=r.ptx_sha256, device_kind=r.device_detail or "",
                      stage="numerics", op=e.op, name=e.name, tool_version=__version__,
                      payload={"numerics": r.numerics, "cases": r.numerics_detail})
    return record


def store_known_proof(store: Store, e: Entry):
    """known_proof for verify_variant: a stored proof of this variant's PTX by the current checker whose
    four properties are all decided (trust.decided_proof)."""
    from kreg.checker.prover.prove import CHECKER_VERSION
    return lambda ptx_sha256: trust.decided_proof(store, e.hash, ptx_sha256, CHECKER_VERSION)


def shipped_record(name: str):
    """The proof record shipped with the built-in registry for the variant of this name
    (kernels/proofs/<name>.json), if any; the prover follows it only where its PTX sha256 and checker fit."""
    from kreg.checker.prover import records
    from kreg.registry.catalog import BUILTIN
    ok = re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name or "")
    return records.load(BUILTIN / "proofs" / f"{name}.json") if ok else None


def store_known_record(store: Store, e: Entry):
    """known_record for verify_variant: the record kept with the stored proof of this PTX by the current
    checker, else the shipped one."""
    from kreg.checker.prover import records
    from kreg.checker.prover.prove import CHECKER_VERSION

    def known(ptx_sha256: str):
        row = store.latest(e.hash, "proof", ptx_sha256=ptx_sha256, checker_version=CHECKER_VERSION)
        try:
            return records.Record.from_json((row or {}).get("payload", {}).get("record"))
        except ValueError:
            return shipped_record(e.name)
    return known


def store_final(store: Store, e: Entry, r: VariantReport, device_kind: str = "") -> None:
    """The speed (with its ratios) and the verdict, only for a variant whose every stage was decided,
    under the device kind its numerics ran on (else device_kind: a rejection before any launch)."""
    if not r.complete:
        return
    common = dict(variant_hash=e.hash, ptx_sha256=r.ptx_sha256 or "", device_kind=r.device_detail or device_kind,
                  op=e.op, name=e.name, tool_version=__version__)
    if r.speed:
        store.put(stage="speed", payload=r.speed, **common)
    store.put(stage="verdict", checker_version=r.checker_version, payload=r.to_json(), **common)
