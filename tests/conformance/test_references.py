"""The float64 references of every op against independent computations (scalar loops with math.fsum,
complex-number RoPE, per-row Python loops, other formulas), and against their op contracts (every
out/inout param returned, with the shape the op gives it)."""
import math

import numpy as np
import pytest

from kreg.conformance.references import REFERENCES, rope_tables
from kreg.registry.catalog import load_catalog

OPS = sorted(load_catalog().ops)       # every op of the registry: a new op needs no edit here
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
        dt = op.dtype_of(k, {t: "bf16" for t in op.types})
        assert v.shape == op.shape(k, dims) and np.all(np.isfinite(v) | np.isneginf(v))   # -inf: an empty split's lse
        assert v.dtype == np.float64 or (dt.startswith(("i", "u")) and v.dtype.kind in "iu"), (k, v.dtype)


def _inputs(rng, T, Hq, Hkv, S):
    cos, sin = rope_tables(S)
    return dict(qkv=rng.standard_normal((T, Hq + 2 * Hkv, 128)), q_norm_w=rng.standard_normal(128),
                k_norm_w=rng.standard_normal(128), rope_cos=cos, rope_sin=sin,
                k_cache=rng.standard_normal((S, Hkv, 128)), v_cache=rng.standard_normal((S, Hkv, 128)))


def _complex_rope(x, w, pos, theta=1e6, eps=1e-6):
    """RoPE as a rotation of the complex numbers x[i] + 1j*x[i+64] by pos * theta^(-i/64)."""
    n = x / np.sqrt((x ** 2).sum() / 128 + eps) * w
    z = (n[:64] + 1j * n[64:]) * np.exp(1j * pos * theta ** (-np.arange(64) / 64.0))
    return np.concatenate([z.real, z.imag])


def test_rope_tables_follow_theta():
    cos, sin = rope_tables(5000)
    assert cos.shape == (5000, 64)
    assert cos[0].tolist() == [1.0] * 64 and sin[0].tolist() == [0.0] * 64
    assert np.isclose(sin[4321, 0], np.sin(4321.0)) and np.isclose(cos[7, 63], np.cos(7 * 1e6 ** (-126 / 128)))


@pytest.mark.parametrize("T,Hq,Hkv,S,start", [(3, 4, 2, 10, 5), (1, 2, 1, 1, 0), (17, 6, 3, 40, 0)])
def test_prefill_matches_complex_rope_and_keeps_other_rows(T, Hq, Hkv, S, start):
    rng = np.random.default_rng(T)
    x = _inputs(rng, T, Hq, Hkv, S)
    got = REFERENCES["qk_norm_rope_prefill"](**x, T=T, Hq=Hq, Hkv=Hkv, S=S, start=start, eps=1e-6)
    assert got["q_out"].shape == (T, Hq, 128)
    for t in range(T):
        for h in range(Hq):
            np.testing.assert_allclose(got["q_out"][t, h], _complex_rope(x["qkv"][t, h], x["q_norm_w"], start + t),
                                       rtol=1e-10, atol=1e-10)
        for h in range(Hkv):
            np.testing.assert_allclose(got["k_cache"][start + t, h],
                                       _complex_rope(x["qkv"][t, Hq + h], x["k_norm_w"], start + t), rtol=1e-10, atol=1e-10)
            assert np.array_equal(got["v_cache"][start + t, h], x["qkv"][t, Hq + Hkv + h])
    other = np.ones(S, bool)
    other[start:start + T] = False
    assert np.array_equal(got["k_cache"][other], x["k_cache"][other])
    assert np.array_equal(got["v_cache"][other], x["v_cache"][other])


def test_decode_is_prefill_of_one_token_at_pos():
    rng = np.random.default_rng(1)
    x = _inputs(rng, 1, 8, 2, 64)
    want = REFERENCES["qk_norm_rope_prefill"](**x, T=1, Hq=8, Hkv=2, S=64, start=37)
    got = REFERENCES["qk_norm_rope_kv"](**{**x, "qkv": x["qkv"][0]}, pos=np.array([37]), Hq=8, Hkv=2, S=64)
    assert np.array_equal(got["q_out"], want["q_out"][0])
    assert np.array_equal(got["k_cache"], want["k_cache"]) and np.array_equal(got["v_cache"], want["v_cache"])


def test_norm_is_per_head_and_uses_eps():
    x = np.zeros((1, 3, 128))
    x[0, 0, 0] = 1e-4       # tiny head: eps dominates the mean square
    x[0, 1] = 3.0
    cos, sin = np.ones((1, 64)), np.zeros((1, 64))
    got = REFERENCES["qk_norm_rope_prefill"](qkv=x, q_norm_w=np.ones(128), k_norm_w=np.full(128, 2.0), rope_cos=cos,
                                             rope_sin=sin, k_cache=np.zeros((1, 1, 128)), v_cache=np.zeros((1, 1, 128)),
                                             T=1, Hq=1, Hkv=1, start=0, eps=1e-6)
    assert np.isclose(got["q_out"][0, 0, 0], 1e-4 / np.sqrt(1e-8 / 128 + float(np.float32(1e-6))))
    assert np.allclose(got["k_cache"][0, 0], 2.0 * 3.0 / np.sqrt(9.0 + float(np.float32(1e-6))))


def _argmax_loop(row):
    best, bi = None, 0
    for i, v in enumerate(row):
        if np.isnan(v):
            continue
        if best is None or v > best:
            best, bi = v, i
    return bi


def test_argmax_lowest_index_on_ties_and_nan_never_wins():
    rng = np.random.default_rng(2)
    x = np.round(rng.standard_normal((50, 300)), 1)            # many ties at the maximum
    x[3, :] = -np.inf
    x[4, 10] = np.nan
    x[5, :] = np.nan
    x[6, 0], x[6, 1:] = np.nan, -np.inf
    got = REFERENCES["argmax"](logits=x, B=50, V=300)["out"]
    assert got.tolist() == [_argmax_loop(r) for r in x]
    assert got[3] == 0 and got[5] == 0 and got[6] == 1
    assert (np.sum(x == x.max(axis=1, keepdims=True), axis=1) > 1).sum() > 5     # the ties were there


def test_gemm_matches_fsum_dot_products():
    T, N, K = 3, 5, 16
    X, W = rng.standard_normal((T, K)), rng.standard_normal((N, K))
    Y = REFERENCES["gemm"](X=X, W=W, T=T, N=N, K=K)["Y"]
    assert Y.shape == (T, N) and Y.dtype == np.float64
    for t in range(T):
        for n in range(N):
            assert Y[t, n] == pytest.approx(math.fsum(X[t, k] * W[n, k] for k in range(K)), rel=1e-13, abs=1e-13)
    # row t of Y depends only on row t of X
    X2 = X.copy()
    X2[1] += 1.0
    Y2 = REFERENCES["gemm"](X=X2, W=W, T=T, N=N, K=K)["Y"]
    assert np.array_equal(Y2[[0, 2]], Y[[0, 2]]) and not np.array_equal(Y2[1], Y[1])


@pytest.mark.parametrize("T, Hq, Hkv, start", [(1, 8, 8, 0), (9, 16, 8, 4), (23, 40, 8, 0), (5, 10, 2, 11)])
def test_attention_prefill_is_causal_softmax_per_row(T, Hq, Hkv, start):
    """Against a direct per (query, head) softmax; cache rows past start + T never matter."""
    n, D = start + T, 128
    q = rng.standard_normal((T, Hq, D))
    k, v = rng.standard_normal((n + 6, Hkv, D)), rng.standard_normal((n + 6, Hkv, D))
    out = REFERENCES["attention_prefill"](q=q, k_cache=k, v_cache=v, T=T, Hq=Hq, Hkv=Hkv, start=start)["out"]
    scale = float(np.float32(1 / math.sqrt(D)))
    for t in range(T):
        for h in range(Hq):
            g, m = h // (Hq // Hkv), start + t + 1
            s = scale * (k[:m, g] @ q[t, h])
            p = np.exp(s - s.max())
            np.testing.assert_allclose(out[t, h], p @ v[:m, g] / p.sum(), rtol=1e-12, atol=1e-12)
    k2, v2 = k.copy(), v.copy()
    k2[n:], v2[n:] = 1e3, -1e3
    again = REFERENCES["attention_prefill"](q=q, k_cache=k2, v_cache=v2, T=T, Hq=Hq, Hkv=Hkv, start=start)["out"]
    assert np.array_equal(again, out)


@pytest.mark.gpu
def test_the_gpu_references_agree_with_the_hosts():
    """The gemv family, gemm, their error scales and prefill computed in CuPy on the GPU (as conformance runs them there) equal
    the NumPy ones up to float64 rounding, and come back as NumPy arrays."""
    from kreg.conformance.harness import open_harness
    from kreg.conformance.references import ERROR_SCALES
    dev = open_harness("gpu")
    X, W = rng.standard_normal((300, 2560)).astype(np.float32), rng.standard_normal((700, 2560)).astype(np.float32)
    q, k = rng.standard_normal((40, 32, 128)), rng.standard_normal((60, 8, 128)).astype(np.float32)
    cases = [(REFERENCES["gemm"], dict(X=X, W=W)), (ERROR_SCALES["gemm"], dict(X=X, W=W)),
             (REFERENCES["attention_prefill"], dict(q=q, k_cache=k, v_cache=-k, T=40, Hq=32, Hkv=8, start=20)),
             (REFERENCES["gemv_residual"], dict(W=W, x=X[0], r=X[1, :700])),
             (REFERENCES["rms_norm_gemv_swiglu"], dict(W=W, x=X[0], w=X[1], I=350)),
             (ERROR_SCALES["rms_norm_gemv_swiglu"], dict(W=W, x=X[0], w=X[1], I=350))]
    for fn, kw in cases:
        with dev.arrays() as xp:
            got = dev.to_host(fn(**kw, xp=xp))
        want = fn(**kw)
        for name in want:
            assert type(got[name]) is np.ndarray and got[name].dtype == np.float64
            np.testing.assert_allclose(got[name], want[name], rtol=1e-11, atol=1e-11)


def test_the_cpu_device_computes_the_references_in_numpy():
    from kreg.conformance.harness import CpuHarness
    dev = CpuHarness()
    with dev.arrays() as xp:
        assert xp is np
    out = {"y": np.arange(3.0)}
    assert dev.to_host(out) is out
