"""The prover against the labelled corpus (tests/data/prover_corpus): no buggy kernel is ever `proven` on
the property its bug breaks; the correct kernels' proof rate is reported (and must not regress);
every safe variant of the registry is proven on all four properties."""
from __future__ import annotations

import time

import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.prove import CHECKER_VERSION, PROPS, prove_variant
from kreg.registry.catalog import load_catalog

from helpers.prover_corpus import (BUGGY, CORPUS, CORRECT, LABELS, TIMEOUT_MS, corpus_budget, corpus_ops, corpus_prove,
                                   corpus_ptx, corpus_variant)


def test_corpus_is_labelled_and_balanced():
    files = {p.stem for p in CORPUS.glob("*/*/*.yaml")}
    assert files == set(LABELS)
    assert len(BUGGY) >= 20 and len(CORRECT) >= 20
    assert {LABELS[n]["breaks"] for n in BUGGY} == set(PROPS)
    for n in BUGGY:
        assert corpus_variant(n).safety == "unsafe"


def test_test_records_fit_this_checker():
    """Every proof record the tests follow (tests/data/records, helpers/recorded.py) is of this checker or of one it
    carries from (followed as carried), and every corpus kernel has one at the tests' budget (what makes the proving
    tests fast; remade or carried after a checker change by the commands in helpers/recorded.py)."""
    from kreg.checker.prover.records import load
    from kreg.checker.ptx.digest import ptx_digest
    from helpers.recorded import RECORDS, REMAKE, record_path
    from kreg.checker.prover.prove import CARRIES_FROM
    fresh = (CHECKER_VERSION, *CARRIES_FROM)      # a record of a version this one carries from is followed as carried
    stale = sorted(p.name for p in RECORDS.glob("*.json") if not ((rec := load(p)) and rec.checker_version in fresh))
    assert not stale, f"proof records of another checker in {RECORDS}: {stale[:5]} (remake: {REMAKE})"
    missing = []
    for n in LABELS:
        v = corpus_variant(n)
        budget = corpus_budget(n)
        rec = load(record_path(v, corpus_ops()[v.op], corpus_ptx(n), TIMEOUT_MS, budget))
        if not (rec and rec.checker_version in fresh and rec.fits(ptx_digest(corpus_ptx(n)), rec.checker_version, budget)):
            missing.append(n)
    assert not missing, f"no fitting proof record for {missing} (remake: {REMAKE})"


@pytest.mark.parametrize("name", BUGGY)
def test_buggy_kernel_never_proven_on_its_property(name):
    res = corpus_prove(name)
    prop = LABELS[name]["breaks"]
    v = res[prop]
    assert v.status != "proven", f"{name}: {prop} wrongly proven ({v.scope})"
    assert v.reason, "a verdict that is not proven says why"
    if v.status == "refuted":
        w = v.witness
        assert set(w["dims"]) == set(corpus_ops()[corpus_variant(name).op].dims)
        assert w["instrs"] and all("index" in i and i["text"] for i in w["instrs"])


@pytest.mark.parametrize("name", CORRECT)
def test_correct_kernel_is_never_refuted(name):
    """Each correct kernel on its own (so the pytest-xdist workers share the corpus's proofs, which the rate test
    below then reads from the session's folder, helpers/session.py): no property refuted."""
    res = corpus_prove(name)
    for p in PROPS:
        assert res[p].status != "refuted", f"{name}: {p} refuted on a correct kernel: {res[p].reason} {res[p].witness}"


def test_correct_kernels_proof_rate(capsys):
    """Runs last (helpers/schedule.py): the proofs are the ones the test above made."""
    proven = [n for n in CORRECT if all(corpus_prove(n)[p].status == "proven" for p in PROPS)]
    for n in CORRECT:
        for p in PROPS:
            v = corpus_prove(n)[p]
            assert v.status != "refuted", f"{n}: {p} refuted on a correct kernel: {v.reason} {v.witness}"
    with capsys.disabled():
        print(f"\nprover corpus: {len(proven)}/{len(CORRECT)} correct kernels proven on all four properties "
              f"(timeout {TIMEOUT_MS} ms); not proven: {sorted(set(CORRECT) - set(proven))}")
    assert len(proven) >= 17


def test_off_by_one_witness_is_concrete():
    v = corpus_prove("bug_off_by_one")["in_bounds"]
    assert v.status == "refuted"
    w = v.witness
    n = w["dims"]["N"]
    assert w["buffer"] in ("a", "b", "out") and w["buffer_bytes"] == 4 * n
    off = w["addresses"][0]["offset"]
    assert off >= 4 * n                                      # it really is past the end
    b, t = w["blocks"][0][0], w["threads"][0][0]
    assert (b * w["block"][0] + t) * 4 == off                 # and it is this thread's element i == N


def test_race_witness_names_two_distinct_threads():
    v = corpus_prove("bug_two_per_index")["race_free"]
    assert v.status == "refuted"
    w = v.witness
    assert len(w["threads"]) == 2
    ga = w["blocks"][0][0] * w["block"][0] + w["threads"][0][0]
    gb = w["blocks"][1][0] * w["block"][0] + w["threads"][1][0]
    assert ga != gb and ga // 2 == gb // 2


def test_verdict_records_ptx_hash_version_and_assumptions():
    import hashlib
    res = corpus_prove("vec_basic")
    sha = hashlib.sha256(corpus_ptx("vec_basic").encode()).hexdigest()
    for p in PROPS:
        assert res[p].status == "proven" and res[p].scope == "all-dims"
        assert res[p].ptx_sha256 == sha and res[p].checker_version == CHECKER_VERSION
        assert "distinct" in res[p].assumptions


def test_solver_timeout_is_never_proven_by_accident():
    res = prove_variant(corpus_variant("matmul_tiled"), corpus_ops()["matmul"], corpus_ptx("matmul_tiled"), timeout_ms=1)
    for p in PROPS:
        assert res[p].status in ("proven", "unknown")
        if res[p].status == "unknown":
            assert res[p].reason


def test_unparsable_ptx_is_unknown():
    res = prove_variant(corpus_variant("vec_basic"), corpus_ops()["vec"], ".version 9.0\n.target sm_90\nbogus;\n")
    assert all(res[p].status == "unknown" and "PTX" in res[p].reason for p in PROPS)


def _hang(*a):
    time.sleep(600)


def _hog(*a):
    return bytearray(16 << 30)       # 16 GiB, far over the limit the test sets


def test_isolated_proof_that_hangs_is_killed_and_decides_nothing(monkeypatch):
    """The hard wall-clock limit of an isolated proof is the environment, never a verdict: WallClockStop."""
    import kreg.checker.prover.prove as prove
    monkeypatch.setattr(prove, "_prove_here", _hang)    # stands for a solver call that ignores its limits
    monkeypatch.setattr(prove, "START", "fork")         # (a forked child sees the stand-in)
    monkeypatch.setattr(prove, "GRACE_S", 1.0)
    monkeypatch.setattr(prove, "VARIANT_GUARD_FLOOR_S", 0.0)
    t = time.monotonic()
    with pytest.raises(prove.WallClockStop, match="hard wall-clock limit"):
        prove.prove_variant(corpus_variant("vec_basic"), corpus_ops()["vec"], corpus_ptx("vec_basic"), timeout_ms=20)
    assert time.monotonic() - t < 10


def test_isolated_proof_over_its_memory_limit_is_unknown(monkeypatch):
    import kreg.checker.prover.prove as prove
    monkeypatch.setattr(prove, "_prove_here", _hog)
    monkeypatch.setattr(prove, "START", "fork")
    monkeypatch.setattr(prove, "MEMORY_MB", 256)
    res = prove.prove_variant(corpus_variant("vec_basic"), corpus_ops()["vec"], corpus_ptx("vec_basic"), timeout_ms=2000)
    assert all(res[p].status == "unknown" and "MemoryError" in res[p].reason for p in PROPS)


def test_isolated_and_in_process_proofs_agree():
    v, op, ptx = corpus_variant("bug_off_by_one"), corpus_ops()["vec"], corpus_ptx("bug_off_by_one")
    a = prove_variant(v, op, ptx, timeout_ms=TIMEOUT_MS)
    b = prove_variant(v, op, ptx, timeout_ms=TIMEOUT_MS, isolate=False)
    assert {p: a[p].status for p in PROPS} == {p: b[p].status for p in PROPS}
    assert a["in_bounds"].witness["dims"] == b["in_bounds"].witness["dims"]


# Safe variants whose proof this checker (prover-0.14 to 0.17) cannot decide: z3's arithmetic core meets phases of work it does not count
# in resource units (branch and bound, diophantine equation rewriting), and only the CPU-time guard stops them, which
# is never a verdict (checker/prover/solving.py). On every machine they stop the same way (bench/results/
# prover_determinism.txt, prover017_records_f16_h200_2026-12-01.jsonl); `kreg verify` reports them as not decided
# (exit 3) rather than as safe or rejected. prover-0.17 decides attention_prefill_f16_safe (proven, 0.248 of its budget).
def _safe_registry():
    cat = load_catalog()
    return [pytest.param(e.variant, cat.ops[e.variant.op], id=e.name)
            for e in cat.entries if e.variant.safety == "safe"]


REMAKE = "python bench/prover_determinism.py --all --jobs N --records kernels/proofs --yaml"


def _shipped(variant, ptx):
    from kreg.checker.ptx.digest import ptx_digest
    from kreg.pipeline import shipped_record
    rec = shipped_record(variant.name)
    assert rec is not None and rec.fits(ptx_digest(ptx), CHECKER_VERSION), \
        f"{variant.name}: no proof record of its PTX by {CHECKER_VERSION} in kernels/proofs (make them: {REMAKE})"
    return rec


@pytest.mark.parametrize("variant,op", _safe_registry())
def test_registry_safe_variant_is_proven_for_all_dims(variant, op):
    """Every safe variant of the registry: all four properties proven for every shape the op allows (not per
    named case), at its own budget (`proof: {budget_ms}`), re-checked as `kreg verify` does, by replaying the
    proof record shipped for its PTX (kernels/proofs: every query the proof relies on solved again, straight at
    the step that closed it; the replay must not fall back and must reproduce the record's work digest). The
    record's full search stays within a third of the budget (headroom: a correct kernel is never one solver
    heuristic away from rejection) and uses as much of it as the YAML says (`proof: {used}`, to 0.1)."""
    from kreg.checker.prover.prove import prove
    ptx = compile_cuda(variant.source_path.read_text(), variant.source_path.name, variant.options).ptx
    rec = _shipped(variant, ptx)
    got = prove(variant, op, ptx, timeout_ms=10000, budget_ms=variant.proof_budget_ms, record=rec)
    res = got.verdicts
    for p in PROPS:
        assert res[p].status == "proven", f"{variant.name}: {p} {res[p].status}: {res[p].reason}"
        assert res[p].scope == "all-dims", f"{variant.name}: {p} proven for {res[p].scope} only"
        assert res[p].ptx_sha256 and res[p].checker_version == CHECKER_VERSION
    assert "fell_back" not in got.work["replay"], f"{variant.name}: {got.work['replay']} (remake: {REMAKE})"
    assert got.work["digest"] == rec.work["digest"] and got.work["budget_used"] == rec.work["budget_used"]
    used = rec.work["budget_used"]
    assert used <= 1 / 3, f"{variant.name}: its proof uses {used:.2f} of its budget (more than a third)"
    said = (variant.raw.get("proof") or {}).get("used")
    assert said is not None and abs(said - used) <= 0.1, \
        f"{variant.name}: its YAML says its proof uses {said} of its budget; it uses {used:.2f}"


@pytest.mark.parametrize("name", ["rms_norm_bf16_safe", "gemv_bf16_safe"])
def test_full_search_gives_the_shipped_record(name):
    """The records in kernels/proofs were made on another machine: a full search here (no record followed)
    gives the same verdicts and the same work, call by call (one PTX, one verdict, on every machine)."""
    from kreg.checker.prover.prove import prove
    cat = load_catalog()
    v = cat.find(name).variant
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
    rec = _shipped(v, ptx)
    got = prove(v, cat.ops[v.op], ptx, timeout_ms=10000, budget_ms=v.proof_budget_ms)
    assert "replay" not in got.work
    assert got.record.calls == rec.calls and got.work["digest"] == rec.work["digest"]


def test_pending_copy_is_not_skipped_by_the_epoch_filter():
    """bug_tc_no_wait reads a tile after a barrier while its cp.async writes may still be pending (no
    wait before the barrier). The write's issue epoch differs from the read's, so a filter that compared
    issue epochs alone skipped the pair and proved the kernel race-free once the budget sufficed (the
    buggy-corpus test above only caught it when its budget ran out first). With a budget that lets the
    proof finish, the race must be refuted, its witness replayed by the emulator."""
    res = corpus_prove("bug_tc_no_wait", timeout_ms=10000, budget_ms=240000)
    assert res["race_free"].status == "refuted", res["race_free"].reason
    assert "shared" in str(res["race_free"].witness) or "xs" in res["race_free"].reason
