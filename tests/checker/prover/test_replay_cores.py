"""Unsat cores in proof records (solving.unsat_core, solving.BvCores): a replay solves each closed query's recorded
core (of an integer query, some of its assertions; of a bitvector one, some of the launch's constraints and the
query) instead of the whole query, with the full search's verdicts, work and witnesses; making cores changes
none of them. A core is never a result: one that does not close is a miss (the full search again), one that is not
a list of the query's assertions is ignored, and no core makes a bug proven (a subset of satisfiable assertions is
satisfiable)."""
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


def _witnesses(proof):
    return {p: v.witness for p, v in proof.verdicts.items()}


@pytest.fixture(scope="module")
def cored():
    return {n: _prove(n, cores=True) for n in NAMES}


def test_cores_change_neither_verdicts_nor_work(cored):
    for name, proof in cored.items():
        plain = _prove(name)
        assert plain.record.cores is None and proof.record.cores
        assert _statuses(proof) == _statuses(plain) and proof.record.calls == plain.record.calls
        assert proof.work["digest"] == plain.work["digest"]
        closed = {f"{key}/{step}": kind for kind, step, result, _, key in proof.record.calls if result == "unsat"}
        for key, (solver, ids) in proof.record.cores.items():
            assert solver in (("step", "smt") if closed[key] == "int" else ("bv",))
            assert ids == sorted(set(ids)) and (ids[0] >= 0 if ids else solver == "bv")
        assert {closed[k] for k in proof.record.cores} == {"int", "bv"}


def test_replay_solves_the_cores_with_the_full_search_verdicts_and_work(cored):
    for name, proof in cored.items():
        again = _prove(name, Record.from_json(proof.record.to_json()))
        assert _statuses(again) == _statuses(proof) and again.work["digest"] == proof.work["digest"]
        assert "fell_back" not in again.work["replay"] and again.work["replay"]["cored"] > 0
        assert again.record.cores == proof.record.cores      # a replay's record keeps them
        assert _witnesses(again) == _witnesses(proof)        # the incremental solver saw the same queries


def test_bv_cores_are_solved_aside():
    """Every closed bitvector query of matmul_tiled and bug_transpose_nobarrier has a core of a few of the launch's
    constraints; the replay solves each on its own (cored counts them), and the bug's witness comes from the
    incremental solver as in the full search (the cored queries run there first, in order)."""
    for name in ("matmul_tiled", "bug_transpose_nobarrier"):
        proof = _prove(name, cores=True)
        bv = [c for c in proof.record.calls if c[0] == "bv" and c[2] == "unsat"]
        cores = {k: v for k, v in proof.record.cores.items() if v[0] == "bv"}
        assert bv and len(cores) == len({f"{c[4]}/smt" for c in bv})
        again = _prove(name, Record.from_json(proof.record.to_json()))
        assert again.work["replay"]["cored"] >= len(bv) and "fell_back" not in again.work["replay"]
        assert _statuses(again) == _statuses(proof) and _witnesses(again) == _witnesses(proof)
        assert again.work["digest"] == proof.work["digest"]


def test_core_that_does_not_close_is_a_miss(cored):
    """matmul_tiled's cores cut to one assertion each (the first: a launch constraint, satisfiable alone): the
    replay's step does not close, the record does not fit, the full search runs and says so."""
    forged = copy.deepcopy(cored["matmul_tiled"].record)
    forged.cores = {k: [solver, [0]] for k, (solver, _) in forged.cores.items()}
    again = _prove("matmul_tiled", forged)
    assert "core" in again.work["replay"]["fell_back"]
    assert _statuses(again) == _statuses(cored["matmul_tiled"])


def test_bv_core_cut_to_nothing_is_a_miss(cored):
    """matmul_tiled's bitvector cores cut to none of the launch's constraints: a query alone is satisfiable, the
    replay misses and the full search runs."""
    forged = copy.deepcopy(cored["matmul_tiled"].record)
    forged.cores = {k: ["bv", []] if solver == "bv" else [solver, ids] for k, (solver, ids) in forged.cores.items()}
    again = _prove("matmul_tiled", forged)
    assert "core" in again.work["replay"]["fell_back"]
    assert _statuses(again) == _statuses(cored["matmul_tiled"])


def test_bv_core_that_is_not_a_list_of_the_launch_s_constraints_is_ignored(cored):
    """Out of range, out of order, repeated or negative indices, an integer query's solver named: solved whole."""
    bad = (["bv", [10 ** 9]], ["bv", [3, 1]], ["bv", [2, 2]], ["bv", [-1, 0]], ["smt", [0, 1]], ["step", [0]])
    forged = copy.deepcopy(cored["matmul_tiled"].record)
    bv = [k for k, (solver, _) in forged.cores.items() if solver == "bv"]
    forged.cores = {k: bad[i % len(bad)] for i, k in enumerate(bv)}
    assert len(bv) >= len(bad)
    again = _prove("matmul_tiled", forged)
    assert again.work["replay"]["cored"] == 0 and "fell_back" not in again.work["replay"]
    assert again.work["digest"] == cored["matmul_tiled"].work["digest"]


def test_core_that_is_not_a_list_of_the_query_s_assertions_is_ignored(cored):
    """Out of range, out of order, repeated or negative indices, no solver named: that query is solved whole."""
    bad = (["step", [10 ** 9]], ["smt", [3, 1]], ["step", [2, 2]], ["smt", [-1, 0]], ["tactic", [0, 1]], [[0, 1]])
    forged = copy.deepcopy(cored["matmul_tiled"].record)
    forged.cores = {k: bad[i % len(bad)] for i, k in enumerate(forged.cores)}
    assert len(forged.cores) >= len(bad)
    again = _prove("matmul_tiled", forged)
    assert again.work["replay"]["cored"] == 0 and "fell_back" not in again.work["replay"]
    assert again.work["digest"] == cored["matmul_tiled"].work["digest"]


@pytest.mark.parametrize("name", ["bug_two_per_index", "bug_off_by_one", "bug_transpose_nobarrier"])
def test_no_core_makes_a_bug_proven(cored, name):
    """A record claiming every query closed, each on a small core (of an integer query, its first assertions; of a
    bitvector one, none or the first launch constraints): the queries that are satisfiable stay so on any subset,
    so the replay misses and the bug is found again."""
    proof = cored.get(name) or _prove(name, cores=True)
    forged = copy.deepcopy(proof.record)
    forged.calls = [[k, s, "unsat", u, key] for k, s, _, u, key in forged.calls]
    forged.cores = {f"{key}/{s}": [("step", "smt")[i % 2], list(range(1 + i % 2))] if k == "int" else
                    ["bv", list(range(i % 3))] for i, (k, s, _, _, key) in enumerate(forged.calls)}
    again = _prove(name, forged)
    assert again.verdicts[LABELS[name]["breaks"]].status != "proven"
    assert _statuses(again) == _statuses(proof)


def test_malformed_cores_are_rejected():
    for bad in ({"k/smt": [1.5]}, {"k/smt": "0 1"}, [[0]], {"k/smt": ["step", [True]]}, {"k/smt": ["step", 0]}):
        with pytest.raises(ValueError):
            Record.from_json({"format": 1, "calls": [], "cores": bad})
