"""Records carried over a checker version (prove(carry=True), prove.CARRIES_FROM): a record of an earlier checker
that solves as this one does is followed and kept, stamped with this version, only where the replay reproduces it
exactly, and is then the record this checker's full search makes; any difference (a query built otherwise, a
record of a checker not listed) is the full search itself."""
from __future__ import annotations

import copy

import pytest

from kreg.checker.prover import prove as prover
from kreg.checker.prover.prove import prove

from helpers.prover_corpus import TIMEOUT_MS, corpus_ops, corpus_ptx, corpus_variant

NAMES = ("matmul_tiled", "bug_off_by_one")
NEXT = "prover-next"


def _prove(name, record=None, carry=False):
    v = corpus_variant(name)
    return prove(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=TIMEOUT_MS, budget_ms=4 * TIMEOUT_MS,
                 isolate=False, record=record, carry=carry)


def _statuses(proof):
    return {p: (str(v.status), v.scope, v.reason) for p, v in proof.verdicts.items()}


@pytest.fixture(scope="module")
def before():
    """Each kernel's full search by the current checker: the records of the 'earlier' version."""
    return {n: _prove(n) for n in NAMES}


@pytest.fixture
def next_version(monkeypatch, before):
    """The checker as if bumped to NEXT by a change that keeps its solving (so it lists the current version)."""
    old = next(iter(before.values())).record.checker_version
    monkeypatch.setattr(prover, "CHECKER_VERSION", NEXT)
    monkeypatch.setattr(prover, "CARRIES_FROM", (old,))
    return old


def test_a_record_carries_exactly_and_is_the_full_search_of_the_next_version(before, next_version):
    for name, proof in before.items():
        carried = _prove(name, proof.record, carry=True)
        assert carried.work["carried"] == {"from": next_version, "exact": True}
        full = _prove(name)                    # the next version's own full search
        assert carried.record.checker_version == full.record.checker_version == NEXT
        assert carried.record.calls == full.record.calls and carried.record.facts == full.record.facts
        assert carried.record.undecided == full.record.undecided
        assert carried.work["digest"] == full.work["digest"] == proof.work["digest"]
        assert _statuses(carried) == _statuses(full)
        assert all(v.checker_version == NEXT for v in carried.verdicts.values())
    assert any(v.status == "refuted" for v in carried.verdicts.values())     # the bug stays refuted


@pytest.mark.parametrize("change", ["key", "result", "one_call_less"])
def test_a_record_the_replay_does_not_reproduce_is_the_full_search(before, next_version, change):
    """As if the next version built another query (a key), closed one the earlier did not (a result), or asked one
    query more. (What a replay does not solve again is the record's, as in every replay: a call's units, as solving
    a recorded core counts other units than the whole query, and the answers it skips, sat and unknown.)"""
    name = "bug_off_by_one"
    forged = copy.deepcopy(before[name].record)
    i = next(n for n, c in enumerate(forged.calls) if c[2] == "unsat")
    if change == "key":
        forged.calls[i][4] = "0" * 24
    elif change == "result":
        j = next(n for n, c in enumerate(forged.calls) if c[2] == "sat")
        forged.calls[j][2] = "unsat"
    else:
        del forged.calls[-1]
    got = _prove(name, forged, carry=True)
    assert got.work["carried"]["exact"] is False and got.work["carried"]["why"]
    assert "replay" not in got.work          # the full search: no record followed
    assert got.record.calls == before[name].record.calls and got.record.checker_version == NEXT
    assert _statuses(got) == _statuses(before[name])


def test_a_record_of_a_checker_not_listed_is_ignored(before, monkeypatch):
    monkeypatch.setattr(prover, "CHECKER_VERSION", NEXT)
    monkeypatch.setattr(prover, "CARRIES_FROM", ())
    name = "matmul_tiled"
    got = _prove(name, before[name].record, carry=True)
    assert "carried" not in got.work and "replay" not in got.work
    assert got.record.checker_version == NEXT and got.record.calls == before[name].record.calls
