"""checker/intabs: every model of the bitvector constraints must extend to a model of their integer
translation plus `side` (the prover turns integer `unsat` into "proven"). Random formulas over every
bitvector operation, checked against a concrete assignment; targeted wrap/sign/learn cases; and
proofs the translation must keep closing. KREG_INTABS_EXAMPLES raises the random example count."""
import os

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kreg.checker.prover.intabs import IntAbs

EXAMPLES = int(os.environ.get("KREG_INTABS_EXAMPLES", "120"))

WIDTHS = (1, 2, 8, 16, 32, 64, 66)
SYMS = {1: ["b1"], 2: ["t2"], 8: ["a8", "c8"], 16: ["h16"], 32: ["x32", "y32"], 64: ["u64", "v64"],
        66: ["s66"]}
SYM = {n: z3.BitVec(n, w) for w, ns in SYMS.items() for n in ns}
BOOL_SYM = z3.Bool("flag")
F32 = z3.Function("f32", z3.BitVecSort(32), z3.BitVecSort(32))
F64 = z3.Function("f64", z3.BitVecSort(64), z3.BitVecSort(64))
Q8 = z3.Function("q8", z3.BitVecSort(8), z3.BitVecSort(16), z3.BitVecSort(16))
P32 = z3.Function("p32", z3.BitVecSort(32), z3.BoolSort())
CONCATS = {2: [(1, 1)], 16: [(8, 8)], 32: [(16, 16), (16, 8, 8)], 64: [(32, 32)], 66: [(2, 64), (1, 1, 64)]}
UNSIGNED_CMP = (z3.ULE, z3.ULT, z3.UGE, z3.UGT)
SIGNED_CMP = (lambda a, b: a <= b, lambda a, b: a < b, lambda a, b: a >= b, lambda a, b: a > b)


def special(w, draw):
    """A constant of width w biased to the edges: 0, 1, -1, -2, the sign bit, masks 2^k-1 and ~(2^k-1)."""
    full, half = 1 << w, 1 << (w - 1)
    k = draw(st.integers(0, w))
    v = draw(st.sampled_from([0, 1, 2, 3, 8, full - 1, full - 2, full - 8, half, half - 1, half + 1,
                              (1 << k) - 1, (full - 1) ^ ((1 << k) - 1), 1 << k % w]))
    if draw(st.booleans()):
        v = draw(st.integers(0, full - 1))
    return v % full


class Gen:
    """Random bitvector terms and formulas (drawn through hypothesis, so failures shrink)."""

    def __init__(self, draw):
        self.draw = draw

    def const(self, w):
        return z3.BitVecVal(special(w, self.draw), w)

    def leaf(self, w):
        if self.draw(st.integers(0, 2)):
            return SYM[self.draw(st.sampled_from(SYMS[w]))]
        return self.const(w)

    def operand(self, w, depth):
        """A term or a constant (constants often: that is where the exact encodings apply)."""
        return self.const(w) if self.draw(st.booleans()) else self.term(w, depth)

    def term(self, w, depth):
        d = self.draw
        if depth <= 0:
            return self.leaf(w)
        n = depth - 1
        kinds = ["leaf", "add", "sub", "neg", "mul", "shl", "lshr", "ashr", "udiv", "urem", "sdiv", "srem",
                 "smod", "extract", "and", "or", "xor", "not", "ite"]
        if w > 1:
            kinds += ["zext", "sext"]
        if w in CONCATS:
            kinds.append("concat")
        if w in (16, 32, 64):
            kinds.append("uf")
        k = d(st.sampled_from(kinds))
        if k == "leaf":
            return self.leaf(w)
        if k == "add":
            return self.term(w, n) + self.operand(w, n)
        if k == "sub":
            return self.operand(w, n) - self.term(w, n)
        if k == "neg":
            return -self.term(w, n)
        if k == "mul":
            return self.operand(w, n) * self.term(w, n)
        if k in ("shl", "lshr", "ashr"):
            a = self.term(w, n)
            if d(st.booleans()):
                s = z3.BitVecVal(d(st.integers(0, w + 2)), w)
            else:
                s = self.term(w, n)
            return {"shl": lambda: a << s, "lshr": lambda: z3.LShR(a, s), "ashr": lambda: a >> s}[k]()
        if k in ("udiv", "urem", "sdiv", "srem", "smod"):
            a, b = self.term(w, n), self.operand(w, n)
            return {"udiv": z3.UDiv, "urem": z3.URem, "sdiv": lambda x, y: x / y, "srem": z3.SRem,
                    "smod": lambda x, y: x % y}[k](a, b)
        if k == "extract":
            big = d(st.sampled_from([v for v in WIDTHS if v >= w]))
            lo = d(st.integers(0, big - w))
            return z3.Extract(lo + w - 1, lo, self.term(big, n))
        if k in ("zext", "sext"):
            small = d(st.sampled_from([v for v in WIDTHS if v < w]))
            return (z3.ZeroExt if k == "zext" else z3.SignExt)(w - small, self.term(small, n))
        if k == "concat":
            parts = d(st.sampled_from(CONCATS[w]))
            return z3.Concat(*[self.term(p, n) for p in parts])
        if k in ("and", "or", "xor"):
            a, b = self.term(w, n), self.operand(w, n)
            return {"and": a & b, "or": a | b, "xor": a ^ b}[k]
        if k == "not":
            return ~self.term(w, n)
        if k == "ite":
            return z3.If(self.formula(n), self.term(w, n), self.term(w, n))
        if w == 16:
            return Q8(self.term(8, n), self.term(16, n))
        return (F32 if w == 32 else F64)(self.term(w, n))

    def formula(self, depth):
        d = self.draw
        kinds = ["cmp", "cmp", "cmp", "eq", "distinct", "mulovf", "p32", "flag"]
        if depth > 0:
            kinds += ["and", "or", "not", "implies", "xor", "bite"]
        k = d(st.sampled_from(kinds))
        n = max(depth - 1, 0)
        w = d(st.sampled_from(WIDTHS))
        if k in ("cmp", "eq", "distinct", "mulovf", "p32"):
            n = d(st.integers(0, 3))                # term depth, independent of the boolean nesting
        if k == "cmp":
            rel = d(st.sampled_from(UNSIGNED_CMP + SIGNED_CMP))
            return rel(self.term(w, n), self.operand(w, n))
        if k == "eq":
            a, b = self.term(w, n), self.operand(w, n)
            return a == b if d(st.booleans()) else a != b
        if k == "distinct":
            return z3.Distinct(self.term(w, n), self.term(w, n), self.operand(w, n))
        if k == "mulovf":
            a, b = self.term(w, n), self.operand(w, n)
            which = d(st.integers(0, 2))
            return z3.BVMulNoUnderflow(a, b) if which == 2 else z3.BVMulNoOverflow(a, b, which == 1)
        if k == "p32":
            return P32(self.term(32, n))
        if k == "flag":
            return BOOL_SYM
        if k == "not":
            return z3.Not(self.formula(n))
        if k == "bite":
            return z3.If(self.formula(n), self.formula(n), self.formula(n))
        a, b = self.formula(n), self.formula(n)
        return {"and": z3.And, "or": z3.Or, "implies": z3.Implies, "xor": z3.Xor}[k](a, b)


def uf_bodies(draw):
    """A concrete interpretation of each uninterpreted function (a bitvector expression of its
    arguments), so that every formula has one truth value under the assignment."""
    v32, v64, v8, v16 = (z3.Var(0, z3.BitVecSort(32)), z3.Var(0, z3.BitVecSort(64)),
                         z3.Var(0, z3.BitVecSort(8)), z3.Var(1, z3.BitVecSort(16)))
    c = [draw(st.integers(0, (1 << 64) - 1)) for _ in range(5)]
    return [(F32, (v32 * (c[0] % (1 << 32) | 1)) ^ z3.LShR(v32, c[1] % 29)),
            (F64, v64 * c[2] + c[3]),
            (Q8, z3.ZeroExt(8, v8) * (c[4] % 251) + v16),
            (P32, z3.ULT(v32 * (c[0] | 1), c[3] % (1 << 32)))]


def truth(f, pins, bodies):
    v = z3.simplify(z3.substitute(z3.substitute_funs(f, *bodies), *pins))
    assert z3.is_true(v) or z3.is_false(v), v
    return z3.is_true(v)


def value(t, pins, bodies):
    v = z3.simplify(z3.substitute(z3.substitute_funs(t, *bodies), *pins))
    assert z3.is_bv_value(v), v
    return v.as_long()


def bound_atoms(draw, gen, vals, pins, bodies):
    """Top-level bounds that hold under the assignment, in the forms IntAbs.learn() reads."""
    out = []
    for name in draw(st.lists(st.sampled_from(sorted(SYM)), max_size=6)):
        x, w = SYM[name], SYM[name].size()
        v, full, half = vals[name], 1 << SYM[name].size(), 1 << (SYM[name].size() - 1)
        sv = v - full if v >= half else v
        slack = draw(st.sampled_from([0, 0, 1, 2, 7, 1000]))
        kind = draw(st.sampled_from(["ule", "uge", "sle", "sge", "eq", "zext", "flip", "not", "term"]))
        if kind == "ule":
            out.append(z3.ULE(x, min(v + slack, full - 1)))
        elif kind == "uge":
            out.append(z3.UGE(x, max(v - slack, 0)))
        elif kind == "sle":
            out.append(x <= z3.BitVecVal(min(sv + slack, half - 1), w))
        elif kind == "sge":
            out.append(x >= z3.BitVecVal(max(sv - slack, -half), w))
        elif kind == "eq":
            out.append(x == v)
        elif kind == "zext":
            out.append(z3.ULE(z3.ZeroExt(2, x), min(v + slack, 4 * full - 1)))
        elif kind == "flip":
            out.append(z3.ULT(z3.BitVecVal(max(v - 1 - slack, 0), w), x) if v > 0 else z3.UGE(x, 0))
        elif kind == "not":
            out.append(z3.Not(z3.UGT(x, min(v + slack, full - 1))))
        else:
            t = gen.term(w, draw(st.integers(0, 2)))
            rel = draw(st.sampled_from(UNSIGNED_CMP + SIGNED_CMP))
            a = rel(x, t)
            out.append(a if truth(a, pins, bodies) else z3.Not(a))
    return out


def assignment(draw):
    vals = {}
    for name, x in SYM.items():
        vals[name] = special(x.size(), draw)
    return vals


def check_extends(cs, vals, flag, timeout_ms=20000):
    """z3 result of: translation + side + every integer symbol pinned to its bitvector value."""
    ia = IntAbs()
    ia.learn(cs)
    g = [ia.formula(c) for c in cs]
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*g, *ia.side)
    s.add(*[z3.Int("iv_" + n) == v for n, v in vals.items()], z3.Bool("ib_flag") == flag)
    return s.check(), ia, g


@st.composite
def constraint_sets(draw):
    gen = Gen(draw)
    vals = assignment(draw)
    flag = draw(st.booleans())
    bodies = uf_bodies(draw)
    pins = [(SYM[n], z3.BitVecVal(v, SYM[n].size())) for n, v in vals.items()] + [(BOOL_SYM, z3.BoolVal(flag))]
    cs = bound_atoms(draw, gen, vals, pins, bodies)
    for _ in range(draw(st.integers(1, 4))):
        f = gen.formula(draw(st.integers(0, 3)))
        if draw(st.integers(0, 4)) == 0:
            f = z3.simplify(f)          # z3's own rewrites bring the internal ops (bvudiv_i, ...)
        cs.append(f if truth(f, pins, bodies) else z3.Not(f))
    return cs, vals, flag, pins, bodies


def _soundness(case):
    cs, vals, flag, pins, bodies = case
    # the generator's own claim: the bitvector constraints hold under the assignment
    bv = z3.Solver()
    bv.add(*[z3.substitute_funs(c, *bodies) for c in cs], *[a == b for a, b in pins])
    assert bv.check() == z3.sat, "generator bug: constraints not satisfied by the assignment"
    r, ia, g = check_extends(cs, vals, flag)
    assert r != z3.unsat, f"UNSOUND: no integer model extends the assignment {vals}\nconstraints: {cs}"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(constraint_sets())
def test_every_bitvector_model_extends_to_the_integer_translation(case):
    _soundness(case)


@pytest.mark.skipif(not os.environ.get("KREG_INTABS_SLOW"), reason="the 3000-example stress run of the soundness test above (minutes); set KREG_INTABS_SLOW=1")
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(constraint_sets())
def test_every_bitvector_model_extends_slow(case):
    _soundness(case)


# ---- targeted cases ---------------------------------------------------------------------------------

def translate(cs, *terms):
    """(IntAbs after learn(cs), integer formulas of cs, (int term, lo, hi) of each term)."""
    ia = IntAbs()
    ia.learn(cs)
    g = [ia.formula(c) for c in cs]
    return ia, g, [ia.term(t) for t in terms]


def pinned(xs, vals):
    return [z3.Int("iv_" + x.decl().name()) == v for x, v in zip(xs, vals)]


def solve(*fs, timeout_ms=20000):
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*fs)
    return s.check()


def assert_exact(cs, t, xs, vals):
    """With the symbols pinned, the integer term of t is forced to t's bitvector value (it may take
    that value: soundness; it may take no other: the encoding did not lose the wrap)."""
    ia, g, [(ti, lo, hi)] = translate(cs, t)
    want = z3.simplify(z3.substitute(t, *[(x, z3.BitVecVal(v, x.size())) for x, v in zip(xs, vals)])).as_long()
    assert lo <= want <= hi
    pins = pinned(xs, vals)
    assert solve(*g, *ia.side, *pins, ti == want) == z3.sat
    assert solve(*g, *ia.side, *pins, ti != want) == z3.unsat
    return ia


X32, Y32, X64, Y64 = z3.BitVec("x32", 32), z3.BitVec("y32", 32), z3.BitVec("u64", 64), z3.BitVec("v64", 64)
M32, M64 = (1 << 32) - 1, (1 << 64) - 1


@pytest.mark.parametrize("x", [0, 1, 7, 8, 9, 1000, 1 << 31, M32])
def test_add_of_negative_constant_wraps_exactly(x):
    for c in (M32, M32 - 7, 1 << 31):              # -1, -8, INT_MIN as 32-bit constants
        assert_exact([], X32 + c, [X32], [x])
        assert_exact([], X32 - (M32 - 7), [X32], [x])
        assert_exact([], X32 * c + 3, [X32], [x])


def test_add_of_negative_constant_with_bounds_needs_no_wrap_variable():
    cs = [z3.UGE(X32, 8), z3.ULE(X32, 1000)]
    ia, g, [(t, lo, hi)] = translate(cs, X32 + (M32 - 7))
    assert (lo, hi) == (0, 992)
    assert not any("ia_q" in str(s) for s in ia.side)      # x - 8 as a plain difference
    for x in (8, 9, 1000):
        assert_exact(cs, X32 + (M32 - 7), [X32], [x])


@pytest.mark.parametrize("y", [0, 1, 5, (1 << 31) - 1, 1 << 31, M32 - 4, M32])
def test_sign_extension_of_possibly_negative_values(y):
    assert_exact([], z3.SignExt(32, Y32), [Y32], [y])
    assert_exact([], z3.SignExt(32, Y32) + 7, [Y32], [y])
    assert_exact([], z3.SignExt(32, Y32 - 3) * 4, [Y32], [y])
    assert_exact([], z3.SignExt(34, Y32), [Y32], [y])
    sv = y - (1 << 32) if y >> 31 else y
    if -5 <= sv <= 5:                               # signed bounds around zero: both signs possible
        cs = [Y32 >= -5, Y32 <= 5]
        assert_exact(cs, z3.SignExt(32, Y32), [Y32], [y])
        assert_exact(cs, z3.SignExt(32, Y32) * 3 + 1, [Y32], [y])


@pytest.mark.parametrize("u,v", [(1 << 40, 1 << 30), (M64, M64), (M64, 2), ((1 << 32) + 1, (1 << 32) - 1),
                                 (3, 5), (0, M64), (1 << 63, 2)])
def test_products_that_overflow_64_bits(u, v):
    for t in (X64 * Y64, X64 * Y64 + X64, X64 * (M64 - 2), (X64 + 1) * (Y64 - 1),
              z3.ZeroExt(2, X64) * z3.ZeroExt(2, Y64)):
        assert_exact([], t, [X64, Y64], [u, v])
    for f in (z3.BVMulNoOverflow(X64, Y64, False), z3.BVMulNoOverflow(X64, Y64, True),
              z3.BVMulNoUnderflow(X64, Y64)):
        holds = z3.is_true(z3.simplify(z3.substitute(f, (X64, z3.BitVecVal(u, 64)), (Y64, z3.BitVecVal(v, 64)))))
        for c in (f, z3.Not(f)):
            ia, g, _ = translate([c])
            r = solve(*g, *ia.side, *pinned([X64, Y64], [u, v]))
            assert r == (z3.sat if (c is f) == holds else z3.unsat), (c, u, v)


def _magic(x, M, s):
    """The compiler's x / d for 32-bit x: the high bits of a 64-bit product by a magic multiplier."""
    return z3.Extract(31, 0, z3.LShR(z3.ZeroExt(32, x) * z3.ZeroExt(32, z3.BitVecVal(M, 32)), 32 + s))


def _divides_by(ia, d):
    return any(f"{d}*" in str(c) for c in ia.side)


@pytest.mark.parametrize("d,s", [(3, 1), (7, 2), (1000, 9), (16896, 12), (641, 9), (5, 2), (10, 3)])
def test_magic_multiplier_division_is_exact_division(d, s):
    M = -(-(1 << (32 + s)) // d)
    assert M < 1 << 32
    exact = (M * d - (1 << (32 + s))) * M32 < 1 << (32 + s)      # the translation's condition
    for x in (0, 1, d - 1, d, 2 * d - 1, 123456789, (1 << 31) - 1, M32):
        ia = assert_exact([], _magic(X32, M, s), [X32], [x])
        if exact:
            assert z3.simplify(_magic(z3.BitVecVal(x, 32), M, s)).as_long() == x // d
    assert _divides_by(ia, d) == exact


@pytest.mark.parametrize("x", [0, 5, 16895, 16896, 99999, M32])
def test_a_multiplier_one_off_is_not_taken_for_a_division(x):
    M, s = -(-(1 << 44) // 16896) + 1, 12                 # not exact for every x: the plain shift is kept
    ia = assert_exact([], _magic(X32, M, s), [X32], [x])
    assert not _divides_by(ia, 16896)


def learned(cs, x):
    ia, _, [(_, lo, hi)] = translate(cs, x)
    return lo, hi


def test_learn_from_signed_bounds():
    for cs in ([X64 >= 1, X64 <= 65536], [X64 <= 65536, X64 >= 1], [z3.Not(X64 < 1), z3.Not(X64 > 65536)],
               [z3.And(1 <= X64, 65536 >= X64)]):
        assert learned(cs, X64) == (1, 65536), cs
    assert learned([X64 > 0, X64 < 65537], X64) == (1, 65536)
    assert learned([z3.UGE(X64, 3), z3.ULT(X64, Y64), z3.ULE(Y64, 10)], X64) == (3, 9)
    assert learned([z3.ULE(z3.ZeroExt(2, X64), 100)], X64) == (0, 100)
    assert learned([X32 == 42], X32) == (42, 42)


def assert_no_model_outside_learned(cs, x):
    """learn() is sound for x: no model of the bitvector constraints puts x outside the interval."""
    lo, hi = learned(cs, x)
    s = z3.Solver()
    s.set("timeout", 10000)
    s.add(*cs, z3.Or(z3.ULT(x, lo), z3.UGT(x, hi)))
    assert s.check() != z3.sat, (cs, x, (lo, hi), s.model())
    return lo, hi


NOT_IMPLIED = [
    [X64 <= 65536],                                 # x may be negative: unsigned it is huge
    [X64 >= -5],                                    # -5 <=s x: both signs
    [X64 >= -5, X64 <= 65536],
    [X64 >= z3.SignExt(32, Y32)],                   # the other side possibly negative
    [X64 > z3.SignExt(32, Y32) - 1, X64 < 100],
    [X64 <= z3.ZeroExt(32, Y32)],                   # other side non-negative, x possibly negative
    [z3.ULE(X64, Y64 + 1)],                         # the bound term can wrap to 0
    [z3.ULE(X64 - 1, 100)],                         # not a symbol: x = 0 makes x - 1 huge
    [z3.ULE(z3.Extract(31, 0, X64), 7)],            # a slice bounds nothing above bit 31
    [z3.SignExt(32, Y32) <= 5, z3.ZeroExt(32, X32) >= -3],
    [z3.ULE(X64, Y64), Y64 <= 1000],                # y may be negative
    [z3.Not(X64 == 5), z3.Distinct(X64, 6)],
]


@pytest.mark.parametrize("cs", NOT_IMPLIED, ids=range(len(NOT_IMPLIED)))
def test_learn_never_learns_a_bound_the_constraints_do_not_imply(cs):
    for x in (X64, Y64, X32, Y32):
        assert_no_model_outside_learned(cs, x)


@st.composite
def bound_sets(draw):
    xs = [X32, Y32, X64, Y64]
    cs = []
    for _ in range(draw(st.integers(1, 5))):
        x = draw(st.sampled_from(xs))
        w = x.size()
        other = [y for y in xs if y.size() == w and not y.eq(x)]
        kind = draw(st.integers(0, 3))
        if kind == 0:
            t = z3.BitVecVal(special(w, draw), w)
        elif kind == 1:
            t = other[0] + z3.BitVecVal(special(w, draw), w)
        elif kind == 2:
            t = z3.SignExt(w // 2, z3.Extract(w // 2 - 1, 0, other[0]))
        else:
            t = z3.ZeroExt(w // 2, z3.Extract(w // 2 - 1, 0, other[0]))
        rel = draw(st.sampled_from(UNSIGNED_CMP + SIGNED_CMP + (lambda a, b: a == b,)))
        a = rel(x, t) if draw(st.booleans()) else rel(t, x)
        cs.append(z3.Not(a) if draw(st.integers(0, 3)) == 0 else a)
    return cs


@settings(max_examples=max(20, EXAMPLES // 3), deadline=None, suppress_health_check=list(HealthCheck))
@given(bound_sets())
def test_learned_intervals_contain_every_model(cs):
    s = z3.Solver()
    s.add(*cs)
    if s.check() != z3.sat:
        return
    for x in (X32, Y32, X64, Y64):
        assert_no_model_outside_learned(cs, x)


# ---- proofs the translation must keep closing -------------------------------------------------------

def refuted(cs, timeout_ms=20000):
    ia, g, _ = translate(cs)
    return solve(*g, *ia.side, timeout_ms=timeout_ms) == z3.unsat


def dims64(*names, hi=65536):
    ds = [z3.BitVec(n, 64) for n in names]
    return ds, [c for d in ds for c in (z3.UGE(d, 1), z3.ULE(d, hi))]


def test_proves_tile_end_within_the_grid():
    (T, H), cs = dims64("T", "H")
    cta, c = z3.BitVec("cta", 32), z3.BitVec("c", 32)
    cta64, c64 = z3.ZeroExt(32, cta), z3.ZeroExt(32, c)
    cs += [z3.ULT(cta64, T), z3.ULE(c64 + 8, H)]
    goal = z3.UGT(cta64 * H + c64 + 8, T * H)
    assert refuted(cs + [goal])
    # and the same with the bound one off is satisfiable (the proof depends on the constraints)
    assert not refuted(cs[:-1] + [z3.ULE(c64 + 7, H), goal])


def test_proves_flat_index_in_bounds_and_distinct_threads_disjoint():
    (B, G), cs = dims64("B", "G", hi=1 << 20)
    tid = [z3.BitVec(f"tid{t}", 32) for t in "AB"]
    cta = [z3.BitVec(f"cta{t}", 32) for t in "AB"]
    idx = [z3.ZeroExt(32, cta[i]) * B + z3.ZeroExt(32, tid[i]) for i in range(2)]
    for i in range(2):
        cs += [z3.ULT(z3.ZeroExt(32, tid[i]), B), z3.ULT(z3.ZeroExt(32, cta[i]), G)]
    n_bytes = G * B * 4
    assert refuted(cs + [z3.UGT(idx[0] * 4 + 4, n_bytes)])
    assert refuted(cs + [idx[0] == idx[1], z3.Or(tid[0] != tid[1], cta[0] != cta[1])])
    assert not refuted(cs + [z3.UGT(idx[0] * 4 + 8, n_bytes)])


def test_proves_through_wraps_of_negative_constants():
    cs = [z3.UGE(X32, 8), z3.ULE(X32, 1 << 20)]
    assert refuted(cs + [(X32 + (M32 - 7)) + 8 != X32])
    assert refuted(cs + [z3.UGE(X32 + (M32 - 7), X32)])
    assert refuted(cs + [z3.SignExt(32, X32 - 8) != z3.ZeroExt(32, X32) - 8])
    assert not refuted([z3.ULE(X32, 1 << 20)] + [z3.UGE(X32 + (M32 - 7), X32)])   # x < 8 wraps


# ---- the translation's memory: ids and names --------------------------------------------------------

def test_memo_survives_freed_formulas():
    ia = IntAbs()
    ia.learn([])
    y = z3.BitVec("y", 32)
    for i in range(50):
        f = y + i == 7
        g = ia.formula(f)
        del f
        assert solve(g, *ia.side, z3.Int("iv_y") == (7 - i) % (1 << 32)) == z3.sat, i


def test_symbols_of_one_name_and_two_widths_stay_apart():
    x8, x16 = z3.BitVec("x", 8), z3.BitVec("x", 16)
    ia, g, _ = translate([x8 == 1, x16 == 2])
    assert solve(*g, *ia.side) == z3.sat
