import functools

import numpy as np
import pytest
from hypothesis import given, settings

from kreg.conformance.shapes import dims_strategy, footprint, is_ragged, named_cases, ragged_dims
from kreg.registry.catalog import load_catalog
from kreg.registry.schema import load_op

OP_2D = """op: mm
dims: {M: [1, 4096], K: [16, 8192]}
types: {T: [bf16]}
requires: ["K % 16 == 0", "M <= K"]
params:
  x: {role: in, dtype: T, shape: [M, K]}
  y: {role: out, dtype: f32, shape: [M]}
reference: mm
tolerance: {f32: {atol: 0.0, rtol: 0.001}}
cases:
  big: {M: 4096, K: 4096}
"""


@functools.cache
def _add():
    cat = load_catalog()
    e = cat.find("add_bf16_safe")
    return cat.ops["add"], e.variant


def test_named_cases_respect_the_budget():
    op, v = _add()
    small = named_cases(op, v, 64 << 10)
    assert set(small) == {n for n, d in op.cases.items() if 6 * d["N"] <= 64 << 10}
    assert "ragged-1023" in small and "qwen3-4b-prefill" not in small
    assert named_cases(op, v, None) == op.cases


def test_ragged_dims_are_seeded_allowed_and_mostly_ragged():
    op, v = _add()
    a = ragged_dims(op, v, 6, 64 << 10, seed=5)
    assert a == ragged_dims(op, v, 6, 64 << 10, seed=5)
    assert a != ragged_dims(op, v, 6, 64 << 10, seed=6)
    assert len(a) == 6 and len({d["N"] for d in a}) == 6
    assert sum(is_ragged(op, d) for d in a) >= 3
    for d in a:
        assert not op.dims_ok(d) and footprint(op, v, d) <= 64 << 10
        assert d not in op.cases.values()


def test_ragged_dims_meet_requirements(tmp_path):
    p = tmp_path / "mm.yaml"
    p.write_text(OP_2D)
    op = load_op(p)

    class V:   # buffer_sizes only needs types and scratch
        types, scratch = {"T": "bf16"}, {}
    ds = ragged_dims(op, V, 5, 1 << 20, seed=0)
    assert len(ds) == 5
    for d in ds:
        assert d["K"] % 16 == 0 and d["M"] <= d["K"] and 2 * d["M"] * d["K"] + 4 * d["M"] <= 1 << 20
    assert any(d["M"] % 8 for d in ds)


@settings(max_examples=60, deadline=None)
@given(data=dims_strategy(*_add(), 1 << 16))
def test_hypothesis_strategy_stays_inside_the_contract(data):
    op, v = _add()
    assert not op.dims_ok(data) and footprint(op, v, data) <= 1 << 16
    assert np.int64(data["N"]) >= 1


def test_pick_is_rng_choice_draw_for_draw():
    from kreg.conformance.shapes import BLOCKISH, pick
    for seed in range(20):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        values = np.array(BLOCKISH[: seed % len(BLOCKISH) + 1]) * (seed + 1) - 3
        for i in range(500):
            assert pick(a, values) == b.choice(list(values))
            if i % 3 == 0:
                assert a.random() == b.random()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")      # NumPy's overflow, which _elements wraps the same way
def test_buffer_sizes_count_elements_as_numpy_int64_does():
    import random
    from kreg.checker.ptx.bind import _elements
    r = random.Random(0)
    for _ in range(5000):
        shape = tuple(r.choice([0, 1, 3, 1 << r.randrange(64), r.randrange(1 << 40)]) for _ in range(r.randrange(5)))
        assert _elements(shape) == int(np.prod(shape, dtype=np.int64)), shape
