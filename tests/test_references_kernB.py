"""The float64 references of qk_norm_rope_kv, qk_norm_rope_prefill and argmax against independent
formulations (complex-number RoPE, per-row Python loops)."""
import numpy as np
import pytest

from kreg.conformance.references import REFERENCES, rope_tables


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
