"""Preconditions, not just verdicts (checker/prover/preconditions.py): for the corpus kernels that are safe only
under a condition nobody wrote down, the search finds that condition and the prover proves all four properties
under it: a float4 load that needs D % 4 == 0, an early return before a barrier that is fine when the block
exactly covers the row, an interleaved tree reduction that needs a power-of-two block. Variant-level
`requires:` (registry/schema.py) narrows the op a variant runs under."""
from __future__ import annotations

from pathlib import Path

import pytest

from kreg.registry.results import PropertyVerdict, Status

from kreg.checker.prover import preconditions as PC
from kreg.checker.prover.prove import prove_variant
from kreg.registry.schema import SchemaError, load_variant, narrowed, skipped_cases

from helpers.prover_corpus import TIMEOUT_MS, corpus_ops, corpus_prove, corpus_ptx, corpus_variant


def _search(name):
    v = corpus_variant(name)
    op = corpus_ops()[v.op]
    return PC.search(v, op, corpus_ptx(name), corpus_prove(name), lambda v2, o2, x: prove_variant(
        v2, o2, x, timeout_ms=TIMEOUT_MS, budget_ms=3 * TIMEOUT_MS, isolate=False))


def _proven_under(name, found):
    v = corpus_variant(name)
    res = prove_variant(v, PC.under(corpus_ops()[v.op], found), corpus_ptx(name), timeout_ms=TIMEOUT_MS,
                        budget_ms=3 * TIMEOUT_MS, isolate=False)
    return all(x.status == "proven" and x.scope == "all-dims" for x in res.values())


def test_a_vector_load_needs_the_dim_divisible_by_its_width():
    s = _search("bug_row_scale_f4_misaligned")
    assert s.found is not None and s.found.requires == ("D % 4 == 0",)
    assert s.skipped_cases == ["odd"]                       # D = 1002
    assert ("D % 2 == 0", "in_bounds refuted") in s.tried   # weaker, tried first, refuted by proof
    assert _proven_under("bug_row_scale_f4_misaligned", s.found)


def test_an_early_return_before_a_barrier_needs_the_block_to_cover_the_row():
    s = _search("bug_row_flip_early_return")
    assert s.found is not None and s.found.requires == ("D == 256",) and s.found.says == ("blockDim.x == D",)
    j = s.to_json()
    assert j["says"] == "blockDim.x == D" and j["skipped_cases"] == ["short"]
    assert _proven_under("bug_row_flip_early_return", s.found)


def test_a_tree_reduction_needs_a_power_of_two_block():
    s = _search("bug_rowsum_interleaved")
    assert s.found is not None and s.found.says == ("K is a power of two",)
    assert PC.Candidate(s.found.requires, s.found.says, 0).holds({"M": 1, "K": 512})
    assert not s.found.holds({"M": 1, "K": 384})
    assert s.skipped_cases == ["odd"]


def test_no_search_where_everything_is_proven():
    s = PC.search(corpus_variant("row_scale_f4"), corpus_ops()["rowscale4"], corpus_ptx("row_scale_f4"), corpus_prove("row_scale_f4"),
                  lambda *a: pytest.fail("no proof should run"))
    assert s.found is None and s.tried == []


def test_candidates_are_a_fixed_bounded_list_weakest_first():
    v, op = corpus_variant("bug_row_flip_early_return"), corpus_ops()["rowflip"]
    a, b = PC.candidates(v, op), PC.candidates(v, op)
    assert a == b and 0 < len(a) <= 40
    ranks = [c.rank for c in a]
    assert ranks == sorted(ranks)
    texts = [c.requires[0] for c in a]
    assert texts.index("D % 2 == 0") < texts.index("D % 4 == 0") < texts.index("D >= 256") < texts.index("D == 256")
    assert all(any(c.holds(case) for case in op.cases.values()) for c in a)


def test_a_search_never_runs_more_proofs_than_its_bound():
    calls = []

    def never(v, o, x):
        calls.append(o)
        return {p: PropertyVerdict(Status.UNKNOWN) for p in ("read_only", "in_bounds", "race_free", "barrier_safe")}
    v = corpus_variant("bug_row_scale_f4_misaligned")
    unknown = {p: PropertyVerdict(Status.UNKNOWN) for p in ("read_only", "in_bounds", "race_free", "barrier_safe")}
    s = PC.search(v, corpus_ops()[v.op], corpus_ptx(v.name), unknown, never, max_proofs=3)
    assert s.found is None and len(calls) == 3


def _variant_yaml(tmp_path, requires):
    src = Path(corpus_variant("bug_row_scale_f4_misaligned").source_path)
    (tmp_path / src.name).write_text(src.read_text())
    text = Path(corpus_variant("bug_row_scale_f4_misaligned").path).read_text() + f"requires: {requires}\n"
    (tmp_path / "v.yaml").write_text(text)
    return tmp_path / "v.yaml"


def test_variant_requires_conjoin_with_the_op_and_skip_the_cases_they_exclude(tmp_path):
    op = corpus_ops()["rowscale"]
    v = load_variant(_variant_yaml(tmp_path, '["D % 4 == 0"]'), corpus_ops())
    n = narrowed(op, v)
    assert [r.text for r in n.requires] == ["D % 4 == 0"] and set(n.cases) == {"decode", "rows"}
    assert skipped_cases(op, v) == {"odd": "variant requirement D % 4 == 0 does not hold"}
    assert narrowed(n, v) == n                                  # idempotent
    assert n.dims_ok({"M": 1, "D": 6}) and not n.dims_ok({"M": 1, "D": 8})


def test_variant_requires_no_named_case_satisfies_are_refused(tmp_path):
    with pytest.raises(SchemaError, match="no named case"):
        load_variant(_variant_yaml(tmp_path, '["D == 7"]'), corpus_ops())
    with pytest.raises(SchemaError):
        load_variant(_variant_yaml(tmp_path, '["Q % 4 == 0"]'), corpus_ops())


def test_bind_refuses_dims_outside_the_variant_requires(tmp_path):
    from kreg.checker.ptx import parse as P
    from kreg.checker.ptx.bind import BindError, bind
    v = load_variant(_variant_yaml(tmp_path, '["D % 4 == 0"]'), corpus_ops())
    module = P.parse(corpus_ptx("bug_row_scale_f4_misaligned"))
    with pytest.raises(BindError, match="variant requirement D % 4 == 0"):
        bind(v, corpus_ops()["rowscale"], module, {"M": 1, "D": 6}, {"x": 256, "out": 1024}, {})
