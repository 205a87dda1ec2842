"""The float64 references of add, rms_norm, add_rms_norm, silu_mul, embedding and gather_row against
independent computations (scalar loops with math.fsum, other formulas), and against their op contracts
(every out/inout param returned, with the shape the op gives it)."""
import math

import numpy as np
import pytest

from kreg.conformance.references import REFERENCES
from kreg.registry.catalog import load_catalog

OPS = ("add", "rms_norm", "add_rms_norm", "silu_mul", "embedding", "gather_row")
rng = np.random.default_rng(7)


def _rms_row(row, w, eps):
    ms = math.fsum(v * v for v in row) / len(row)
    return [v / math.sqrt(ms + eps) * g for v, g in zip(row, w)]


def test_add_is_the_exact_sum():
    a, b = rng.standard_normal(37), rng.standard_normal(37)
    out = REFERENCES["add"](a=a, b=b, N=37)["out"]
    assert out.dtype == np.float64
    assert all(out[i] == a[i] + b[i] for i in range(37))


def test_rms_norm_matches_scalar_loops():
    x, w = rng.standard_normal((5, 24)) * 3, rng.standard_normal(24)
    y = REFERENCES["rms_norm"](x=x, w=w, eps=1e-6, T=5, H=24)["y"]
    for t in range(5):
        np.testing.assert_allclose(y[t], _rms_row(x[t], w, 1e-6), rtol=1e-14)
    # with unit weights each row has mean square 1 (up to eps)
    y1 = REFERENCES["rms_norm"](x=x, w=np.ones(24), eps=0.0, T=5, H=24)["y"]
    np.testing.assert_allclose((y1 ** 2).mean(axis=1), 1.0, rtol=1e-13)


def test_rms_norm_eps_matters_for_small_rows():
    x = np.full((1, 8), 1e-4)
    y = REFERENCES["rms_norm"](x=x, w=np.ones(8), eps=1e-6, T=1, H=8)["y"]
    np.testing.assert_allclose(y, 1e-4 / math.sqrt(1e-8 + 1e-6), rtol=1e-14)


def test_add_rms_norm_is_the_sum_then_its_norm():
    x, r, w = rng.standard_normal((3, 16)), rng.standard_normal((3, 16)), rng.standard_normal(16)
    got = REFERENCES["add_rms_norm"](x=x, residual=r, w=w, eps=1e-6, T=3, H=16)
    assert set(got) == {"residual", "y"}
    for t in range(3):
        s = [r[t, i] + x[t, i] for i in range(16)]
        assert list(got["residual"][t]) == s
        np.testing.assert_allclose(got["y"][t], _rms_row(s, w, 1e-6), rtol=1e-14)


def test_silu_mul_against_the_tanh_form_and_halves():
    T, I = 4, 10
    gu = rng.standard_normal((T, 2 * I)) * 4
    out = REFERENCES["silu_mul"](gate_up=gu, T=T, I=I)["out"]
    g, u = gu[:, :I], gu[:, I:]
    np.testing.assert_allclose(out, g * 0.5 * (1 + np.tanh(g / 2)) * u, rtol=1e-13, atol=1e-300)
    # swapping the halves changes the result: the gate is the first I columns
    assert not np.allclose(out, REFERENCES["silu_mul"](gate_up=np.concatenate([u, g], 1), T=T, I=I)["out"])


def test_silu_mul_limits_are_finite():
    gu = np.array([[-1000.0, 0.0, 1000.0, 2.0, 3.0, 5.0]])
    out = REFERENCES["silu_mul"](gate_up=gu, T=1, I=3)["out"]
    assert np.all(np.isfinite(out))
    assert out[0, 0] == 0.0 and out[0, 1] == 0.0 and out[0, 2] == 5000.0


def test_embedding_copies_rows_by_id():
    table = rng.standard_normal((9, 8))
    ids = np.array([8, 0, 0, 3])
    out = REFERENCES["embedding"](table=table, ids=ids, T=4, V=9, H=8)["out"]
    for t, i in enumerate(ids):
        assert list(out[t]) == list(table[i])


def test_gather_row_takes_row_r():
    x = rng.standard_normal((6, 8))
    out = REFERENCES["gather_row"](x=x, T=6, H=8, R=5)["out"]
    assert list(out) == list(x[5])
    out[0] = 123.0
    assert x[5, 0] != 123.0           # a copy, not a view into the input


@pytest.mark.parametrize("opname", OPS)
def test_reference_agrees_with_the_op_contract(opname):
    """At the smallest case: the reference returns exactly the out/inout params, shaped as the op says."""
    op = load_catalog().ops[opname]
    name, dims = min(op.cases.items(), key=lambda kv: op.traffic_bytes(kv[1], {t: "bf16" for t in op.types}))
    inputs = {}
    for p in op.params.values():
        if p.role in ("in", "inout"):
            shape = op.shape(p.name, dims)
            inputs[p.name] = (rng.integers(int(p.values[0](dims)), int(p.values[1](dims)) + 1, size=shape)
                              if p.values else rng.standard_normal(shape))
        elif p.role == "scalar" and not p.shape:
            inputs[p.name] = p.default
    got = REFERENCES[op.reference](**inputs, **dims)
    want = {p.name for p in op.params.values() if p.role in ("out", "inout")}
    assert set(got) == want
    for k, v in got.items():
        assert v.shape == op.shape(k, dims) and v.dtype == np.float64 and np.all(np.isfinite(v))
