"""Unsat cores in proof records (solving.unsat_core): a replay solves each closed integer query's recorded core
instead of the whole query, with the full search's verdicts and work; making cores changes neither. A core is
never a result: one that does not close is a miss (the full search again), one that is not a list of the query's
assertions is ignored, and no core makes a bug proven (a subset of satisfiable assertions is satisfiable)."""
from __future__ import annotations

import copy

import pytest

from kreg.checker.prover.prove import prove
from kreg.checker.prover.records import Record

from helpers.prover_corpus import LABELS, TIMEOUT_MS, corpus_ops, corpus_ptx, corpus_variant

NAMES = ("matmul_tiled", "bug_two_per_index")


def _prove(name, record=None, cores=False):
    v = corpus_variant(name)
    return prove(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=TIMEOUT_MS, budget_ms=4 * TIMEOUT_MS,
                 isolate=False, record=record, cores=cores)


def _statuses(proof):
    return {p: (str(v.status), v.scope) for p, v in proof.verdicts.items()}


@pytest.fixture(scope="module")
def cored():
    return {n: _prove(n, cores=True) for n in NAMES}


def test_cores_change_neither_verdicts_nor_work(cored):
    for name, proof in cored.items():
        plain = _prove(name)
        assert plain.record.cores is None and proof.record.cores
        assert _statuses(proof) == _statuses(plain) and proof.record.calls == plain.record.calls
        assert proof.work["digest"] == plain.work["digest"]
        closed = {f"{key}/{step}" for kind, step, result, _, key in proof.record.calls
                  if kind == "int" and result == "unsat"}
        for key, (solver, ids) in proof.record.cores.items():
            assert key in closed and solver in ("step", "smt") and ids == sorted(set(ids)) and ids[0] >= 0


def test_replay_solves_the_cores_with_the_full_search_verdicts_and_work(cored):
    for name, proof in cored.items():
        again = _prove(name, Record.from_json(proof.record.to_json()))
        assert _statuses(again) == _statuses(proof) and again.work["digest"] == proof.work["digest"]
        assert "fell_back" not in again.work["replay"] and again.work["replay"]["cored"] > 0
        assert again.record.cores == proof.record.cores      # a replay's record keeps them


def test_core_that_does_not_close_is_a_miss(cored):
    """matmul_tiled's cores cut to one assertion each (the first: a launch constraint, satisfiable alone): the
    replay's step does not close, the record does not fit, the full search runs and says so."""
    forged = copy.deepcopy(cored["matmul_tiled"].record)
    forged.cores = {k: [solver, [0]] for k, (solver, _) in forged.cores.items()}
    again = _prove("matmul_tiled", forged)
    assert "core" in again.work["replay"]["fell_back"]
    assert _statuses(again) == _statuses(cored["matmul_tiled"])


def test_core_that_is_not_a_list_of_the_query_s_assertions_is_ignored(cored):
    """Out of range, out of order, repeated or negative indices, no solver named: that query is solved whole."""
    bad = (["step", [10 ** 9]], ["smt", [3, 1]], ["step", [2, 2]], ["smt", [-1, 0]], ["tactic", [0, 1]], [[0, 1]])
    forged = copy.deepcopy(cored["matmul_tiled"].record)
    forged.cores = {k: bad[i % len(bad)] for i, k in enumerate(forged.cores)}
    assert len(forged.cores) >= len(bad)
    again = _prove("matmul_tiled", forged)
    assert again.work["replay"]["cored"] == 0 and "fell_back" not in again.work["replay"]
    assert again.work["digest"] == cored["matmul_tiled"].work["digest"]


@pytest.mark.parametrize("name", ["bug_two_per_index", "bug_off_by_one"])
def test_no_core_makes_a_bug_proven(cored, name):
    """A record claiming every query closed, each integer one on a small core of its first assertions: the
    queries that are satisfiable stay so on any subset, so the replay misses and the bug is found again."""
    proof = cored.get(name) or _prove(name, cores=True)
    forged = copy.deepcopy(proof.record)
    forged.calls = [[k, s, "unsat", u, key] for k, s, _, u, key in forged.calls]
    forged.cores = {f"{key}/{s}": [("step", "smt")[i % 2], list(range(1 + i % 2))]
                    for i, (k, s, _, _, key) in enumerate(forged.calls) if k == "int"}
    again = _prove(name, forged)
    assert again.verdicts[LABELS[name]["breaks"]].status != "proven"
    assert _statuses(again) == _statuses(proof)


def test_malformed_cores_are_rejected():
    for bad in ({"k/smt": [1.5]}, {"k/smt": "0 1"}, [[0]], {"k/smt": ["step", [True]]}, {"k/smt": ["step", 0]}):
        with pytest.raises(ValueError):
            Record.from_json({"format": 1, "calls": [], "cores": bad})
