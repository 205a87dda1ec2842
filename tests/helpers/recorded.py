"""Proofs made by the tests follow proof records kept in tests/data/records, as `kreg verify` follows the
registry's (kernels/proofs): every query a verdict rests on is solved again from scratch, straight at the step
that closed it, so the verdicts are the full search's, faster. A record is found by its PTX's sha256, the variant's and op's
metadata and the proof's budgets; one that does not fit (another checker, another PTX, another budget) is ignored and the proof
runs in full. After a checker change, remake them all (each proof then runs in full and writes its record):

    rm -r tests/data/records && KREG_REMAKE_RECORDS=1 python -m pytest tests/checker tests/kernels -n N

(KREG_REMAKE_RECORDS=missing makes only those that are missing or no longer fit; =cores adds the closed queries'
unsat cores (solving.unsat_core, solving.BvCores) to the records that fit, by replaying them: the same calls, a
faster replay; =carry, after a checker version that keeps the solving of the one that made them (prove.CARRIES_FROM),
replays each and keeps it, stamped with the new version, where the replay reproduces it exactly, else runs the full
search: the records of a change to what queries are built, for the replays' cost.) A record of a version this checker
carries from is followed as carried (prove(carry=True): kept only where the replay reproduces it exactly, which is this
checker's full search), so the tests stay fast between a version bump and the carry.

A proof asked for by several tests runs once per test session, whichever pytest-xdist worker asks first
(helpers/session.py: the others wait for it and read it back rather than prove it again).
"""
from __future__ import annotations

import hashlib
import json
import os

from kreg.checker.prover import records
from kreg.checker.prover.prove import CHECKER_VERSION, Proof, prove
from kreg.checker.ptx.digest import ptx_digest

from helpers.paths import DATA
from helpers.session import once

RECORDS = DATA / "records"
REMAKE = "rm -r tests/data/records && KREG_REMAKE_RECORDS=1 python -m pytest tests/checker tests/kernels -n N"


def record_path(variant, op, ptx: str, timeout_ms: int, budget_ms: int):
    spec = hashlib.sha256(json.dumps([variant.raw, op.raw], sort_keys=True, default=str).encode()).hexdigest()
    return RECORDS / f"{ptx_digest(ptx)[:16]}-{spec[:8]}-{timeout_ms}-{budget_ms}.json"


def prove_recorded(variant, op, ptx: str, *, timeout_ms: int, budget_ms: int) -> Proof:
    """prove() in a fresh interpreter (so its work does not follow what this process proved before), following
    the record of this PTX at these budgets; with KREG_REMAKE_RECORDS set, a full search that writes it. Once
    per test session (see above)."""
    spec = json.dumps([variant.raw, op.raw, ptx, timeout_ms, budget_ms], sort_keys=True, default=str)
    return once("proof " + spec, lambda: _prove_recorded(variant, op, ptx, timeout_ms, budget_ms),
                dump=Proof.to_json, load=Proof.from_json)


def _prove_recorded(variant, op, ptx: str, timeout_ms: int, budget_ms: int) -> Proof:
    path = record_path(variant, op, ptx, timeout_ms, budget_ms)
    remake = os.environ.get("KREG_REMAKE_RECORDS")
    known = records.load(path)
    if remake == "missing" and known and known.fits(ptx_digest(ptx), CHECKER_VERSION, budget_ms):
        remake = None
    if remake == "cores" and not (known and known.fits(ptx_digest(ptx), CHECKER_VERSION, budget_ms)):
        remake = "1"
    if remake:
        got = prove(variant, op, ptx, timeout_ms=timeout_ms, budget_ms=budget_ms, cores=True,
                    record=known if remake in ("cores", "carry") else None, carry=remake == "carry")
        if remake == "cores":       # the same work, whether the replay followed the record or fell back
            assert got.record is not None and got.record.work.get("digest") == known.work.get("digest"), path
        if got.record is not None:
            RECORDS.mkdir(exist_ok=True)
            got.record.save(path)
        return got
    return prove(variant, op, ptx, timeout_ms=timeout_ms, budget_ms=budget_ms, record=known, carry=True)
