"""Proof records (checker/prover/records.py): a replay gives the full search's verdicts and work; a record is
never a result: a forged one can skip queries (the prover's fallbacks then) or miss (the full search again),
never make a bug proven; one of another PTX, checker or budget is ignored. A property the record shows
undecided has its recorded answers followed, and must come out undecided again."""
from __future__ import annotations

import copy

import pytest

from kreg.checker.prover.prove import CHECKER_VERSION, PROPS, prove
from kreg.checker.prover.records import Record, query_key

from helpers.prover_corpus import TIMEOUT_MS, corpus_budget, corpus_ops, corpus_ptx, corpus_variant


def _prove(name, record=None, budget_ms=4 * TIMEOUT_MS):
    v = corpus_variant(name)
    return prove(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=TIMEOUT_MS, budget_ms=budget_ms,
                 isolate=False, record=record)


def _statuses(proof):
    return {p: (str(v.status), v.scope) for p, v in proof.verdicts.items()}


@pytest.fixture(scope="module")
def full():
    return {n: _prove(n) for n in ("matmul_tiled", "bug_off_by_one", "bug_two_per_index")}


def test_replay_gives_the_full_search_verdicts_and_work(full):
    for name, proof in full.items():
        again = _prove(name, proof.record)
        assert _statuses(again) == _statuses(proof)
        assert again.work["digest"] == proof.work["digest"] and again.work["units"] == proof.work["units"]
        assert "fell_back" not in again.work["replay"] and again.work["replay"]["replayed"] > 0


def test_record_claiming_every_query_closed_falls_back_and_never_proves_a_bug(full):
    for name in ("bug_off_by_one", "bug_two_per_index"):
        forged = copy.deepcopy(full[name].record)
        forged.calls = [[k, s, "unsat", u, key] for k, s, _, u, key in forged.calls]
        forged.facts = [[key, True] for key, _ in forged.facts]
        again = _prove(name, forged)
        assert "fell_back" in again.work["replay"]
        assert _statuses(again) == _statuses(full[name])
        assert any(v.status == "refuted" for v in again.verdicts.values())


def test_record_claiming_nothing_closed_never_proves_a_bug(full):
    """Skipped queries leave the prover to its fallbacks (other encodings, smaller groups, named cases), each
    solved for real: the verdicts may differ from the full search's, but a bug is never proven. (A bitvector query
    the forged record shows unknown is still run in order in the incremental solver before the next query that
    needs it: one that closes there is a miss, and the full search follows.)"""
    from helpers.prover_corpus import LABELS
    for name in ("bug_off_by_one", "bug_two_per_index", "matmul_tiled"):
        forged = copy.deepcopy(full[name].record)
        forged.calls = [[k, s, "unknown", u, key] for k, s, _, u, key in forged.calls]
        forged.facts = [[key, False] for key, _ in forged.facts]
        again = _prove(name, forged)
        replay = again.work["replay"]       # queries skipped, or a bitvector one kept in order closed: a miss
        assert replay.get("skipped", 0) > 0 or "gave" in replay.get("fell_back", ""), replay
        if name in LABELS and LABELS[name].get("breaks"):
            assert again.verdicts[LABELS[name]["breaks"]].status != "proven"
        else:
            assert all(v.status != "refuted" for v in again.verdicts.values())


def test_fact_recorded_as_held_must_hold_again():
    """ticket_compact's symbolic execution makes quick checks (solving.always), one of which does not hold: a
    record claiming they all held is a miss at that one (the full search runs); one claiming none held skips
    them all (nothing assumed from them: its proofs can only weaken), never refuting the kernel."""
    name = "ticket_compact"
    proof = _prove(name)
    assert any(held for _, held in proof.record.facts) and not all(held for _, held in proof.record.facts)
    forged = copy.deepcopy(proof.record)
    forged.facts = [[key, True] for key, _ in forged.facts]
    again = _prove(name, forged)
    assert "fact" in again.work["replay"]["fell_back"] and _statuses(again) == _statuses(proof)
    forged.facts = [[key, False] for key, _ in forged.facts]
    again = _prove(name, forged)
    assert again.work["replay"].get("facts_skipped", 0) > 0 or "fell_back" in again.work["replay"]
    assert all(v.status != "refuted" for v in again.verdicts.values())


def test_undecided_property_follows_its_record_and_ends_undecided(full):
    """On a small budget tc_tile's proof runs out after some of its queries closed, leaving three properties
    unknown: their closed queries' recorded answers are followed (not solved again: nothing rests on them) and
    the replay gives the full search's verdicts and work."""
    proof = _prove("tc_tile", budget_ms=1000)
    assert proof.record.undecided == [sorted(p for p, v in proof.verdicts.items() if v.status == "unknown")] != [[]]
    again = _prove("tc_tile", proof.record, budget_ms=1000)
    assert _statuses(again) == _statuses(proof) and again.work["digest"] == proof.work["digest"]
    assert "fell_back" not in again.work["replay"] and again.work["replay"]["followed"] > 0


def test_bitvector_query_left_unknown_is_kept_in_order_and_the_replay_does_not_fall_back():
    """bug_wide_late's record (tests/data/records, a full search on the lent H200) has bitvector queries left
    unknown before a sat one whose model the prover uses: the replay does not run them where they are, but its
    incremental solver must see them before that sat query (without them it came out unknown: a miss, and the full
    search again). The replay, in a fresh process as kreg verify runs it, follows the record: its digest."""
    from helpers.recorded import prove_recorded, record_path
    from kreg.checker.prover import records
    v, ptx = corpus_variant("bug_wide_late"), corpus_ptx("bug_wide_late")
    op, budget = corpus_ops()[v.op], corpus_budget("bug_wide_late")
    rec = records.load(record_path(v, op, ptx, TIMEOUT_MS, budget))
    assert rec is not None and any(c[0] == "bv" and c[2] == "unknown" for c in rec.calls)
    got = prove_recorded(v, op, ptx, timeout_ms=TIMEOUT_MS, budget_ms=budget)
    assert "fell_back" not in got.work["replay"], got.work["replay"]
    assert got.work["digest"] == rec.work["digest"]


@pytest.mark.parametrize("name", ["matmul_tiled", "bug_off_by_one", "bug_two_per_index"])
def test_record_claiming_decided_properties_undecided_falls_back(full, name):
    """Followed answers must leave the property undecided: a record that shows a proven or refuted property
    undecided (every call closed, or its real calls) decides it in the replay, a miss: the full search."""
    for calls in ("real", "unsat"):
        forged = copy.deepcopy(full[name].record)
        forged.undecided = [list(PROPS)]
        if calls == "unsat":
            forged.calls = [[k, s, "unsat", u, key] for k, s, _, u, key in forged.calls]
        forged.facts = [[key, True] for key, _ in forged.facts]
        again = _prove(name, forged)
        assert "fell_back" in again.work["replay"] and _statuses(again) == _statuses(full[name])


@pytest.mark.parametrize("change", ["ptx_sha256", "checker_version", "budget_ms"])
def test_record_of_another_ptx_checker_or_budget_is_ignored(full, change):
    rec = copy.deepcopy(full["matmul_tiled"].record)
    if change == "budget_ms":
        rec.work["budget_ms"] = 1
    else:
        setattr(rec, change, "other")
    again = _prove("matmul_tiled", rec)
    assert "replay" not in again.work and _statuses(again) == _statuses(full["matmul_tiled"])


def test_record_round_trips_and_rejects_malformed_json(full, tmp_path):
    rec = full["matmul_tiled"].record
    assert rec.checker_version == CHECKER_VERSION and len(rec.calls) == rec.work["queries"]
    rec.save(tmp_path / "r.json")
    from kreg.checker.prover.records import load
    assert load(tmp_path / "r.json").to_json() == rec.to_json()
    for bad in ({"format": 1, "calls": [["bv", "smt", "unsat", "many", "k"]]}, {"format": 99, "calls": []}, [1],
                {"format": 1, "calls": [], "undecided": ["race_free"]}, {"format": 1, "calls": [], "facts": [["k", 1]]}):
        with pytest.raises(ValueError):
            Record.from_json(bad)
    (tmp_path / "bad.json").write_text("{not json")
    assert load(tmp_path / "bad.json") is None


def test_query_key_ignores_the_printer_s_term_ids():
    a = "(let (($x1302 (and p q))) (let ((?x77 (+ y 1))) (and $x1302 (> ?x77 0))))"
    b = "(let (($x9 (and p q))) (let ((?x1234 (+ y 1))) (and $x9 (> ?x1234 0))))"
    c = "(let (($x9 (and p r))) (let ((?x1234 (+ y 1))) (and $x9 (> ?x1234 0))))"
    assert query_key(a) == query_key(b) != query_key(c)
    assert set(PROPS) == {"read_only", "in_bounds", "race_free", "barrier_safe"}


def test_query_names_are_renamed_as_the_printer_order_gives_them():
    """records._canonical is LET.sub numbering each name at its first appearance (computed from a split on the
    names' rare characters): the same text for any spelling of z3's let and term names."""
    import random
    import re
    from kreg.checker.prover.records import LET, _canonical

    def spec(text):
        names: dict[str, str] = {}
        return LET.sub(lambda m: names.setdefault(m.group(), f"$t{len(names)}"), text)
    rng = random.Random(7)
    texts = ["(let ((a!1 (bvadd x y))) (and a!1 $x12 ?x3 k!45 $x12 a!1))", "k!1", "!1 a! $1!2 ?a1!2 ab!1 _k!2 é!3"]
    texts += ["".join(rng.choice("ab$?!_ (1é2Zk") for _ in range(rng.randint(0, 16))) for _ in range(5000)]
    for t in texts:
        assert _canonical(t) == spec(t), t
    assert _canonical("(f a!7 $x9 a!7)") == _canonical("(f a!2 $x4 a!2)") == "(f $t0 $t1 $t0)"
    assert re.fullmatch(r"[0-9a-f]{24}", query_key("(f a!7)")) and query_key("(f a!7)") == query_key("(f a!1)")
