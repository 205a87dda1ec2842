"""Exact rounding helpers of the emulator against rational arithmetic (fractions.Fraction)."""
import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kreg.checker.emulator import fpround as F

FORMATS = {"f32": (24, -126, 127), "f16": (11, -14, 15), "bf16": (8, -126, 127)}


def round_rational(q: Fraction, fmt: str, mode: str) -> float:
    """Reference: q rounded to fmt with mode, as a Python float (every such value is a double)."""
    p, emin, emax = FORMATS[fmt]
    if q == 0:
        return 0.0
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - p + 1)
    n = a / quantum
    lo = math.floor(n)
    rem = n - lo
    if mode == "rn":
        up = rem > Fraction(1, 2) or (rem == Fraction(1, 2) and lo % 2 == 1)
    elif mode == "rz":
        up = False
    elif mode == "rp":
        up = rem > 0 and sign > 0
    else:  # rm
        up = rem > 0 and sign < 0
    mag = (lo + up) * quantum
    top = Fraction(2) ** (emax + 1)
    if mag >= top:
        maxf = top - Fraction(2) ** (emax - p + 1)
        to_inf = mode == "rn" or (mode == "rp" and sign > 0) or (mode == "rm" and sign < 0)
        return sign * math.inf if to_inf else sign * float(maxf)
    return sign * float(mag)


def as_float(bits, fmt):
    return float(F.to_f64(np.asarray([bits]), fmt)[0])


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
modes = st.sampled_from(["rn", "rz", "rm", "rp"])


@settings(max_examples=400, deadline=None)
@given(a=finite32, b=finite32, c=finite32, mode=modes)
def test_fma_f32_is_correctly_rounded(a, b, c, mode):
    got = as_float(F.fma_exact(np.float32(a), np.float32(b), np.float32(c), "f32", mode), "f32")
    want = round_rational(Fraction(a) * Fraction(b) + Fraction(c), "f32", mode)
    assert got == want or (got == want == 0)


@settings(max_examples=300, deadline=None)
@given(m=st.integers(1, 2**23), k=st.integers(-30, 30), sign=st.sampled_from([1, -1]), tail=st.integers(-3, 3))
def test_fma_at_double_rounding_ties(m, k, sign, tail):
    # a*b lands exactly on an f32 halfway point and c nudges it by far less than a double ulp
    a = np.float32(sign * (2 * m + 1) * 2.0 ** k)
    b = np.float32(2.0 ** -24)
    c = np.float32(tail * 2.0 ** (k - 80))
    got = as_float(F.fma_exact(a, b, c, "f32"), "f32")
    assert got == round_rational(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), "f32", "rn")


@settings(max_examples=300, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False), fmt=st.sampled_from(["f32", "f16", "bf16"]), mode=modes)
def test_narrowing_from_f64(x, fmt, mode):
    got = as_float(F.round_exact(np.float64(x), 0.0, fmt, mode), fmt)
    assert got == round_rational(Fraction(x), fmt, mode)


@settings(max_examples=300, deadline=None)
@given(a=st.floats(width=16, allow_nan=False, allow_infinity=False),
       b=st.floats(width=16, allow_nan=False, allow_infinity=False),
       c=st.floats(width=16, allow_nan=False, allow_infinity=False))
def test_fma_f16(a, b, c):
    got = as_float(F.fma_exact(np.float64(a), np.float64(b), np.float64(c), "f16"), "f16")
    assert got == round_rational(Fraction(a) * Fraction(b) + Fraction(c), "f16", "rn")


def test_bf16_rounding_and_nan():
    x = np.array([1.0, 1.00390625, 1.01171875, -3.0e38, np.inf, np.nan, 1e-40], np.float32)
    bits = F.f32_to_bf16_rn(x)
    assert bits.tolist() == [0x3F80, 0x3F80, 0x3F82, 0xFF62, 0x7F80, 0x7FFF, 0x0001]


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(["f32", "f16", "bf16"]), m=st.integers(0, 2**24), k=st.integers(-140, 140),
       sign=st.sampled_from([1.0, -1.0]))
def test_every_halfway_point_is_seen_by_the_quick_check(fmt, m, k, sign):
    # the midpoint of two adjacent fmt values (any binade, its edges, subnormal, near overflow) must never be
    # ruled out: fma_exact and round_exact skip the double-rounding fix only where maybe_halfway says no
    p, emin, emax = FORMATS[fmt]
    k = max(min(k, emax), emin)
    m %= 2 ** (p - 1) - (k == emax)      # the top binade's last midpoint has no finite upper neighbour
    normal = np.float64(sign * (2 ** p + 2 * m + 1) * 2.0 ** (k - p))      # in [2^k, 2^(k+1)): binade k
    subnormal = np.float64(sign * (2 * m + 1) * 2.0 ** (emin - p))       # below 2^emin
    for s in (normal, subnormal):
        q = Fraction(float(s))
        assert round_rational(q, fmt, "rz") != round_rational(q, fmt, "rp" if sign > 0 else "rm")   # not a value
        assert abs(Fraction(round_rational(q, fmt, "rz")) - q) == abs(
            Fraction(round_rational(q, fmt, "rp" if sign > 0 else "rm")) - q)                   # but halfway
        assert F.maybe_halfway(np.asarray([s]), fmt)
        assert F.maybe_halfway(np.asarray([1.25, 3.0, s]), fmt)


@settings(max_examples=200, deadline=None)
@given(a=st.lists(finite32, min_size=1, max_size=8), b=finite32, c=finite32, tie=st.integers(1, 2**23))
def test_fma_arrays_with_and_without_a_halfway_element_are_correctly_rounded(a, b, c, tie):
    # a batch with no halfway float64 sum takes the quick path, one with a tie the full one: both exact
    for extra in ([], [(2 * tie + 1) * 2.0 ** -30]):
        xs = np.asarray(a + extra, np.float32)
        ys = np.asarray([b] * len(a) + [2.0 ** -24] * len(extra), np.float32)
        zs = np.asarray([c] * len(a) + [2.0 ** -120] * len(extra), np.float32)
        got = F.to_f64(F.fma_exact(xs, ys, zs, "f32"), "f32")
        for g, x, y, z in zip(got, xs, ys, zs):
            want = round_rational(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), "f32", "rn")
            assert g == want or (g == want == 0)


def test_the_quick_check_rules_out_ordinary_sums():
    assert not F.maybe_halfway(np.asarray([1.0 + 2.0 ** -30, 3.25, -7.0 + 2.0 ** -40]), "f32")
    assert F.maybe_halfway(np.asarray([1.0 + 2.0 ** -24]), "f32")          # halfway between 1 and 1 + 2^-23
    assert not F.maybe_halfway(np.asarray([0.0, -0.0, 1.5]), "f32")                 # zero: the exact value
    assert F.maybe_halfway(np.asarray([np.nan]), "bf16") and F.maybe_halfway(np.asarray([1e-40]), "f32")
