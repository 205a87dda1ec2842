"""Flash-decoding contracts: the float64 references of attention_decode and attention_merge (together:
softmax attention over the first n cached positions; empty splits), the split count the engine picks
(choose_splits) and the named cases that use it."""
import numpy as np
import pytest

from kreg.conformance.references import REFERENCES, split_positions
from kreg.conformance.splits import BLOCKS_PER_SM, H100_SMS, HEADS_PER_BLOCK, MAX_SPLITS, MIN_CHUNK, choose_splits
from kreg.registry.catalog import load_catalog

SCALE = float(np.float32(0.08838834764831845))


def _attention(q, k, v, n, Hq, Hkv):
    kvh = np.arange(Hq) // (Hq // Hkv)
    s = np.einsum("hd,jhd->hj", q, k[:n, kvh]) * SCALE
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return np.einsum("hj,jhd->hd", w / w.sum(axis=1, keepdims=True), v[:n, kvh]), np.log(np.exp(s).sum(axis=1))


@pytest.mark.parametrize("Hq,Hkv,S,P,n", [(4, 1, 3, 8, 3), (10, 2, 77, 2, 77), (8, 2, 131, 4, 50), (3, 3, 37, 5, 1),
                                          (32, 8, 300, 33, 299)])
def test_decode_then_merge_is_softmax_attention_over_n_positions(Hq, Hkv, S, P, n):
    rng = np.random.default_rng(S)
    q, k, v = rng.standard_normal((Hq, 128)), rng.standard_normal((S, Hkv, 128)), rng.standard_normal((S, Hkv, 128))
    k[n:] = v[n:] = np.nan                                 # positions >= n are never read
    part = REFERENCES["attention_decode"](q=q, k_cache=k, v_cache=v, n=np.array([n]), Hq=Hq, Hkv=Hkv, S=S, P=P)
    out = REFERENCES["attention_merge"](**part, Hq=Hq, P=P)["out"]
    want, lse = _attention(q, k, v, n, Hq, Hkv)
    assert np.allclose(out, want, rtol=1e-12, atol=1e-12)
    # the splits' lse combine to the whole sum's; an empty split is (-inf, 0)
    assert np.allclose(np.logaddexp.reduce(part["lse_part"], axis=0), lse, rtol=1e-12)
    empty = [p for p, pos in enumerate(split_positions(n, P)) if not pos]
    assert np.isneginf(part["lse_part"][empty]).all() and (part["o_part"][empty] == 0).all()


def test_split_positions_partition_n_evenly():
    for n in (1, 2, 7, 64, 1000):
        for P in (1, 3, 8, 64, 1024):
            b = split_positions(n, P)
            assert sorted(j for pos in b for j in pos) == list(range(n))
            assert all(len(pos) in (n // P, -(-n // P)) for pos in b)          # balanced: sizes differ by <= 1
            assert [bool(pos) for pos in b] == [p < n for p in range(P)]


def test_merge_ignores_empty_splits_even_with_nan_rows():
    o = np.ones((3, 2, 128))
    o[1] = np.nan
    lse = np.array([[0.0, 1.0], [-np.inf, -np.inf], [np.log(3.0), 1.0]])
    out = REFERENCES["attention_merge"](o_part=o, lse_part=lse)["out"]
    assert np.allclose(out, 1.0)


def test_choose_splits_fills_one_wave_but_keeps_splits_long():
    assert choose_splits(1, 8, H100_SMS) == 1
    assert choose_splits(127, 8, H100_SMS) == -(-127 // MIN_CHUNK)          # >= MIN_CHUNK positions per split
    for n in (8192, 32768, 131072):
        for hq in (None, 8, 32, 40, 64):
            P = choose_splits(n, 8, H100_SMS, hq)
            blocks = P * 8 * (-(-(hq or 8) // 8 // HEADS_PER_BLOCK))
            assert blocks <= BLOCKS_PER_SM * H100_SMS < blocks + 8 * HEADS_PER_BLOCK * 2     # one full wave
            assert -(-n // P) >= MIN_CHUNK
    assert choose_splits(8192, 8, H100_SMS, 64) == choose_splits(8192, 8, H100_SMS, 32) // 2   # G = 8: 2 blocks
    assert choose_splits(131072, 1, 1000) == MAX_SPLITS
    with pytest.raises(ValueError):
        choose_splits(0, 8, 132)
    with pytest.raises(ValueError):
        choose_splits(64, 8, 132, 12)                                        # hq not a multiple of hkv


def test_named_model_cases_use_the_engines_split_count():
    cat = load_catalog()
    dec, mer = cat.ops["attention_decode"], cat.ops["attention_merge"]
    models = {name: d for name, d in dec.cases.items() if name.startswith("qwen3-")}
    assert len(models) == 20
    for name, d in models.items():
        assert d["P"] == choose_splits(d["S"], d["Hkv"], H100_SMS, d["Hq"]), name
        assert (d["Hq"], d["P"]) in {(m["Hq"], m["P"]) for m in mer.cases.values()}, name
    groups = {d["Hq"] // d["Hkv"] for d in dec.cases.values()}
    assert {1, 2, 4, 5, 8} <= groups
    assert any(d["P"] > d["S"] for d in dec.cases.values())                    # splits left empty
