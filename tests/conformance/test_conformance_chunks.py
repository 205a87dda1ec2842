"""The chunked host paths of conformance give what the whole-array ones gave: compare() against the
plain implementation it replaced, seeded inputs independent of the thread count, exact() against
decode() on every 16-bit pattern."""
import numpy as np
import pytest

from kreg.conformance import chunks, inputs, numerics
from kreg.conformance.dtypes import decode, encode, exact
from kreg.conformance.numerics import _index, compare, within


def compare_whole(name, got, want, dtype, tolerance, ignore=None):
    """compare() as it was before chunking (floats only): the specification of the chunked one."""
    shape = want.shape
    got, want = got.reshape(-1), np.asarray(want, dtype=np.float64).reshape(-1)
    if ignore is not None and ignore.any():
        got = np.where(~ignore.reshape(-1), got, want)
    stats = {"max_abs_err": 0.0, "max_rel_err": 0.0, "worst": None, "elements": int(want.size)}
    atol, rtol = tolerance["atol"], tolerance["rtol"]
    ok = within(got, want, tolerance)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(got - want)
        bound = atol + rtol * np.abs(want)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        finite = np.isfinite(err)
        if finite.any():
            stats["max_abs_err"] = float(err[finite].max())
            nz = finite & (want != 0)
            stats["max_rel_err"] = float((err[nz] / np.abs(want[nz])).max()) if nz.any() else 0.0
        ratio = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err / np.where(bound > 0, bound, 0)))
    ratio = np.nan_to_num(ratio, nan=np.inf, posinf=np.inf)
    w = int(np.argmax(ratio))
    stats["worst"] = {"index": _index(shape, w), "got": float(got[w]), "want": float(want[w]),
                      "err_over_tol": float(ratio[w])}
    bad = np.flatnonzero(~ok)
    if not bad.size:
        return [], stats
    why = []
    nan = np.flatnonzero(np.isnan(got) & ~np.isnan(want))
    if nan.size:
        why.append(f"{name}: {nan.size} NaN where the reference is finite, first at {_index(shape, int(nan[0]))}")
    if bad.size > nan.size:
        why.append(f"{name}: {bad.size} of {want.size} elements outside atol={atol:g} rtol={rtol:g}; worst at "
                   f"{stats['worst']['index']}: got {got[w]:.6g}, want {want[w]:.6g} "
                   f"(error {ratio[w]:.3g}x the tolerance)")
    return why, stats


@pytest.mark.parametrize("seed", range(12))
def test_chunked_compare_matches_the_whole_array_compare(monkeypatch, seed):
    monkeypatch.setattr(numerics, "COMPARE_CHUNK", 7)
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 9)), int(rng.integers(1, 40)))
    want = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, shape)
    want[rng.random(shape) < 0.05] = 0.0
    got = exact(encode(want, "bf16"), "bf16")                        # float32, within tolerance
    tol = {"atol": [0.0, 1e-4][seed % 2], "rtol": 0.0079}
    for kind, frac in (("far", 0.03 * (seed % 3)), ("nan", 0.02 * (seed % 4 == 1)), ("inf", 0.02 * (seed % 5 == 2))):
        hit = rng.random(shape) < frac
        got[hit] = {"far": got[hit] * 1.5 + 1e-3, "nan": np.nan, "inf": np.inf}[kind]
    if seed % 6 == 3:
        want[0, 0], got[0, 0] = np.nan, np.nan                        # NaN matching NaN is right
    ignore = rng.random(shape) < 0.1 if seed % 4 == 0 else None
    chunked = compare("y", got, want, "bf16", tol, ignore)
    assert repr(chunked) == repr(compare_whole("y", got.astype(np.float64), want, "bf16", tol, ignore))   # NaN == NaN


def test_chunked_compare_reports_what_the_whole_one_reports_on_a_failure(monkeypatch):
    monkeypatch.setattr(numerics, "COMPARE_CHUNK", 5)
    want = np.linspace(-3, 3, 64)
    got = want.copy()
    got[[9, 40]] = [np.nan, want[40] * 1.1]
    why, stats = compare("y", got, want, "f32", {"atol": 0.0, "rtol": 1e-3})
    assert why == ["y: 1 NaN where the reference is finite, first at [9]",
                   f"y: 2 of 64 elements outside atol=0 rtol=0.001; worst at [9]: got nan, want {want[9]:.6g} "
                   "(error inf x the tolerance)".replace("inf x", "infx")]
    assert stats["max_abs_err"] == pytest.approx(abs(want[40]) * 0.1)


def test_seeded_inputs_do_not_depend_on_threads_or_blocks(monkeypatch):
    monkeypatch.setattr(inputs, "CHUNK", 1000)
    a = inputs._normal_bits((7, 1001), "bf16", 5)
    monkeypatch.setattr(inputs, "BLOCK", 37)
    monkeypatch.setattr(chunks, "_pool", lambda: type("Serial", (), {"map": staticmethod(map)})())
    b = inputs._normal_bits((7, 1001), "bf16", 5)
    assert a.shape == (7, 1001) and a.dtype == np.uint16 and np.array_equal(a, b)
    flat = a.reshape(-1)
    assert not np.array_equal(flat[:1000], flat[1000:2000])            # each chunk has its own stream
    assert not np.array_equal(a, inputs._normal_bits((7, 1001), "bf16", 6))


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_seeded_inputs_are_standard_normal_rounded_to_the_dtype(dtype):
    x = decode(inputs._normal_bits((400_000,), dtype, 1), dtype)
    assert np.array_equal(decode(encode(x, dtype), dtype), x)        # representable: the bits round-trip
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    for k, p in ((1, 0.6827), (2, 0.9545), (3, 0.9973)):               # the normal's mass within k sigma
        assert abs(np.mean(np.abs(x) < k) - p) < 0.004


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_exact_values_are_decode_on_every_pattern(dtype):
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    e, d = exact(bits, dtype), decode(bits, dtype)
    assert e.dtype == np.float32
    assert np.array_equal(e.astype(np.float64), d, equal_nan=True)


@pytest.mark.parametrize("op", ["add", "rms_norm", "add_rms_norm", "silu_mul", "argmax", "qk_norm_rope_prefill"])
def test_references_by_blocks_of_rows_equal_the_whole_array(monkeypatch, op):
    from kreg.conformance import references
    from kreg.conformance.references import REFERENCES, rope_tables
    rng = np.random.default_rng(1)
    T, H = 13, 24
    args = {"add": dict(a=rng.standard_normal(T * H), b=rng.standard_normal(T * H)),
            "rms_norm": dict(x=rng.standard_normal((T, H)), w=rng.standard_normal(H)),
            "add_rms_norm": dict(x=rng.standard_normal((T, H)), residual=rng.standard_normal((T, H)),
                                 w=rng.standard_normal(H)),
            "silu_mul": dict(gate_up=rng.standard_normal((T, 2 * H)).astype(np.float32), I=H),
            "argmax": dict(logits=np.round(rng.standard_normal((T, H)), 1)),
            "qk_norm_rope_prefill": dict(qkv=rng.standard_normal((T, 4, 128)), q_norm_w=rng.standard_normal(128),
                                         k_norm_w=rng.standard_normal(128), rope_cos=rope_tables(20)[0],
                                         rope_sin=rope_tables(20)[1], k_cache=rng.standard_normal((20, 1, 128)),
                                         v_cache=rng.standard_normal((20, 1, 128)), T=T, Hq=2, Hkv=1, start=5)}[op]
    whole = REFERENCES[op](**args)
    monkeypatch.setattr(references, "BLOCK", 50)                     # several rows per block, a ragged last one
    blocked = REFERENCES[op](**args)
    assert whole.keys() == blocked.keys()
    for k in whole:
        assert whole[k].dtype == blocked[k].dtype and np.array_equal(whole[k], blocked[k])


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_alias_table_gives_each_pattern_the_normal_mass_that_rounds_to_it(dtype):
    from math import erf, sqrt
    accept, own, alias = inputs.rounded_normal_table(dtype)
    a = accept / 2.0 ** 48
    prob = np.zeros(1 << 16)
    np.add.at(prob, own, a / (1 << 16))
    np.add.at(prob, alias, (1 - a) / (1 << 16))
    assert prob.sum() == pytest.approx(1.0, abs=1e-12)
    v = decode(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16), dtype)
    assert prob[~np.isfinite(v)].sum() == 0.0                       # never NaN or infinity
    for x in (0.0123, -0.3, 0.999, 1.0, -1.7, 2.5, -3.9):
        b = encode(np.array([x]), dtype)[0]                          # the pattern x rounds to, and its neighbours
        val, up, down = (float(decode(np.array([c], np.uint16), dtype)[0]) for c in (b, b + 1, b - 1))
        lo, hi = sorted(((val + up) / 2, (val + down) / 2))
        want = (erf(hi / sqrt(2)) - erf(lo / sqrt(2))) / 2
        assert prob[b] == pytest.approx(want, rel=1e-6)


def test_an_infinity_is_the_right_answer_where_the_reference_overflows_the_dtype():
    """f16 holds at most 65504 (values from 65520 on round to inf): inf of the reference's sign matches a
    reference beyond that, or within the tolerance of it; anywhere else an infinity is wrong."""
    from kreg.conformance.numerics import compare
    tol = {"atol": 0.002, "rtol": 0.00099}
    want = np.array([70000.0, -152512.0, 65480.0, 65000.0, -70000.0, 1.0])
    got = np.array([np.inf, -np.inf, np.inf, np.inf, np.inf, np.inf])
    why, _ = compare("out", got, want, "f16", tol)
    assert why and "3 of 6 elements" in why[0]                   # 65000 (too far), the wrong sign, 1.0
    why, _ = compare("out", got[:3], want[:3], "f16", tol)       # 65480 + 65 reaches 65520
    assert why == []
    why, _ = compare("out", got[:2], want[:2], "bf16", tol)      # bf16 holds 70000: inf is wrong there
    assert why and "2 of 2 elements" in why[0]
