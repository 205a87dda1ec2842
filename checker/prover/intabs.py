"""Bitvector formulas as integer formulas, for proofs the bit-blaster cannot close in time.

Every bitvector term becomes an integer term equal to its unsigned value; where the operation can
wrap (its interval, from the bounds the constraints give the leaves, leaves [0, 2^w)) a fresh
integer carries the wrap, so the translation stays exact. Operations with no cheap exact encoding
(bitwise and/or/xor of non-masks, variable shifts, signed division) become fresh integers in their
range, i.e. lose information. So every model of the bitvector formulas extends to a model of the
integer ones: `unsat` here means `unsat` there, which is all the prover uses it for. z3's nonlinear
integer arithmetic then reasons about products of thread indices and dims (monotonicity) that the
bit-blaster cannot."""
from __future__ import annotations

import z3

K = z3  # short alias for the op kinds below


class IntAbs:
    """Translate bitvector/bool formulas to integer/bool ones (over-approximation, see module doc).
    `learn(constraints)` first learns unsigned intervals of symbols from top-level atoms."""

    def __init__(self):
        self.iv: dict[int, tuple[int, int]] = {}       # symbol id -> learned unsigned interval
        self.pow2: dict[int, int] = {}                 # symbol id -> k: learned to be a multiple of 2^k
        self.vmemo: dict[int, int] = {}
        self.omemo: dict[int, int] = {}                # term id -> mask of the bits that may be one
        self.monos: dict[tuple, tuple] = {}            # atom ids -> (monomial, atoms)
        self.lemmas: dict[tuple, list] = {}            # (monomial key, monomial key) -> lemmas
        self.rec: dict = {}                            # memo key -> _Frame
        self.opaque: set = set()                       # ids of fresh integers standing for bit operations
        self.stack: list = []
        self.memo: dict = {}                           # term id (or (view, id)) -> translation
        self.ivs: dict[int, tuple[int, int]] = {}      # integer term id -> its interval
        self.syms: dict[tuple, z3.ExprRef] = {}        # (name, sort) -> integer or bool symbol
        self.ufs: dict[tuple, z3.FuncDeclRef] = {}
        self.side: list[z3.BoolRef] = []               # definitions of fresh integers
        self.n = 0
        self.keep: list = []                           # every AST whose id is a key above
        self.names: dict[str, int] = {}

    # ---- bounds ---------------------------------------------------------------------------------
    def learn(self, constraints, rounds: int = 3):
        atoms = []
        for c in constraints:
            _conjuncts(c, atoms)
        for _ in range(rounds):
            self.memo.clear()
            changed = False
            for a in atoms:
                changed |= self._learn_atom(a)
            if not changed:
                break
        self.memo.clear()
        self.omemo.clear()
        self.ivs.clear()
        self.side.clear()
        self.syms.clear()
        self.ufs.clear()
        self.names.clear()
        self.monos.clear()
        self.lemmas.clear()
        self.rec.clear()

    def _learn_atom(self, a) -> bool:
        k = a.decl().kind()
        neg = False
        if k == z3.Z3_OP_NOT:
            a = a.arg(0)
            k, neg = a.decl().kind(), True
        rel = {z3.Z3_OP_ULEQ: "ule", z3.Z3_OP_ULT: "ult", z3.Z3_OP_UGEQ: "uge", z3.Z3_OP_UGT: "ugt",
               z3.Z3_OP_SLEQ: "sle", z3.Z3_OP_SLT: "slt", z3.Z3_OP_SGEQ: "sge", z3.Z3_OP_SGT: "sgt",
               z3.Z3_OP_EQ: "eq"}.get(k)
        if rel is None or not z3.is_bv(a.arg(0)):
            return False
        if neg:
            rel = {"ule": "ugt", "ult": "uge", "uge": "ult", "ugt": "ule", "sle": "sgt", "slt": "sge",
                   "sge": "slt", "sgt": "sle"}.get(rel)
            if rel is None:
                return False
        if rel == "eq":
            self._learn_pow2(a.arg(0), a.arg(1))
            self._learn_pow2(a.arg(1), a.arg(0))
        changed = False
        for x, t, r in ((a.arg(0), a.arg(1), rel), (a.arg(1), a.arg(0), _flip(rel))):
            w = x.size()
            view = "zext" if x.decl().kind() == z3.Z3_OP_ZERO_EXT and x.size() > x.arg(0).size() else \
                "sext" if x.decl().kind() == z3.Z3_OP_SIGN_EXT else "same"
            y = x.arg(0) if view != "same" else x
            if not _is_leaf(y):
                continue
            n, d = y.size(), r in ("ult", "ugt", "slt", "sgt")
            half = 1 << (n - 1)
            _, tlo, thi = self.term(t)
            lo, hi = self._sym_iv(y)
            if r == "eq" and tlo == thi and view != "sext":
                lo, hi = max(lo, tlo), min(hi, thi)
            elif r in ("ule", "ult") and view != "sext":
                hi = min(hi, thi - d)
            elif r in ("uge", "ugt") and view != "sext":
                lo = max(lo, tlo + d)
            elif r in ("sle", "slt", "sge", "sgt") and thi < 1 << (w - 1):
                # the other side is non-negative as a signed value: signed and unsigned bounds agree
                # once y is known to be non-negative (y's own sign bit for "same" and "sext" views)
                if r in ("sge", "sgt"):
                    if view == "zext":
                        lo = max(lo, tlo + d)
                    elif tlo + d < half:
                        lo, hi = max(lo, tlo + d), min(hi, half - 1)
                elif view == "zext" or hi < half:
                    hi = min(hi, thi - d)
            if (lo, hi) != self._sym_iv(y) and lo <= hi:
                self.iv[y.get_id()] = (lo, hi)
                self.keep.append(y)
                changed = True
        return changed

    def _learn_pow2(self, t, zero):
        """`x % 2^k == 0`, `x & (2^k - 1) == 0` or `x[k-1:0] == 0`: x is a multiple of 2^k."""
        if not (z3.is_bv_value(zero) and zero.as_long() == 0):
            return
        k, ch = t.decl().kind(), t.children()
        x, bits = None, 0
        if k in (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I) and z3.is_bv_value(ch[1]):
            m = ch[1].as_long()
            x, bits = ch[0], (m & -m).bit_length() - 1
        elif k == z3.Z3_OP_BAND and len(ch) == 2 and z3.is_bv_value(ch[1]):
            m = ch[1].as_long()
            x, bits = ch[0], (m + 1).bit_length() - 1 if m & (m + 1) == 0 else 0
        elif k == z3.Z3_OP_EXTRACT and t.params()[1] == 0:
            x, bits = ch[0], t.params()[0] + 1
        if x is not None and _is_sym(_strip_zext(x)) and bits > 0:
            x = _strip_zext(x)
            self.pow2[x.get_id()] = max(self.pow2.get(x.get_id(), 0), min(bits, x.size()))
            self.keep.append(x)

    def twos(self, e) -> int:
        """k such that e's value is a multiple of 2^k (a lower bound; wrapping mod 2^w keeps it)."""
        key = e.get_id()
        v = self.vmemo.get(key)
        if v is None:
            v = self.vmemo[key] = min(self._twos(e), e.size())
            self.keep.append(e)
        return v

    def _twos(self, e):
        k, ch = e.decl().kind(), e.children()
        if k == z3.Z3_OP_BNUM:
            v = e.as_long()
            return e.size() if v == 0 else (v & -v).bit_length() - 1
        if k == z3.Z3_OP_UNINTERPRETED:
            return self.pow2.get(e.get_id(), 0) if not ch else 0
        if k in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB, z3.Z3_OP_ITE, z3.Z3_OP_BOR):
            return min(self.twos(c) for c in (ch[1:] if k == z3.Z3_OP_ITE else ch))
        if k == z3.Z3_OP_BMUL:
            return sum(self.twos(c) for c in ch)
        if k in (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I, z3.Z3_OP_BSREM, z3.Z3_OP_BSREM_I, z3.Z3_OP_BSMOD,
                 z3.Z3_OP_BSMOD_I):                    # a - b * q
            return min(self.twos(ch[0]), self.twos(ch[1]))
        if k in (z3.Z3_OP_BNEG, z3.Z3_OP_ZERO_EXT, z3.Z3_OP_SIGN_EXT):
            return self.twos(ch[0])
        if k == z3.Z3_OP_BAND:
            return max(self.twos(c) for c in ch)
        if k == z3.Z3_OP_BSHL:
            slo = self._shift(ch[1])
            return self.twos(ch[0]) + slo if slo is not None else 0
        if k == z3.Z3_OP_EXTRACT:
            hi, lo = e.params()
            return max(0, self.twos(ch[0]) - lo)
        if k == z3.Z3_OP_CONCAT:
            out, shift = e.size(), 0
            for c in reversed(ch):
                out, shift = min(out, shift + self.twos(c)), shift + c.size()
            return out
        return 0

    def ones(self, e) -> int:
        """A mask of the bits of e's value that may be one (every other bit is known zero)."""
        key = e.get_id()
        v = self.omemo.get(key)
        if v is None:
            v = self.omemo[key] = self._ones(e)
            self.keep.append(e)
        return v

    def _ones(self, e):
        w = e.size()
        full = (1 << w) - 1
        k, ch = e.decl().kind(), e.children()
        if k == z3.Z3_OP_BNUM:
            return e.as_long()
        hi = self.term(e)[2]
        out = ((1 << hi.bit_length()) - 1) & full & ~((1 << self.twos(e)) - 1)     # its interval, its low zeros
        if k in (z3.Z3_OP_BOR, z3.Z3_OP_BXOR):
            m = 0
            for c in ch:
                m |= self.ones(c)
            return out & m
        if k == z3.Z3_OP_BAND:
            m = full
            for c in ch:
                m &= self.ones(c)
            return out & m
        if k == z3.Z3_OP_BADD:              # no two terms with a common one bit: no carry, | of them
            m = 0
            for c in ch:
                o = self.ones(c)
                if m & o:
                    return out
                m |= o
            return out & m
        if k in (z3.Z3_OP_BSHL, z3.Z3_OP_BLSHR):
            s = self._shift(ch[1])
            if s is None:
                return out
            if s >= w:
                return 0
            return out & ((self.ones(ch[0]) << s) & full if k == z3.Z3_OP_BSHL else self.ones(ch[0]) >> s)
        if k == z3.Z3_OP_ZERO_EXT:
            return out & self.ones(ch[0])
        if k == z3.Z3_OP_EXTRACT:
            hb, lb = e.params()
            return out & (self.ones(ch[0]) >> lb) & full
        return out

    def _sym_iv(self, x):
        return self.iv.get(x.get_id(), (0, (1 << x.size()) - 1))

    # ---- translation ----------------------------------------------------------------------------
    def formula(self, f) -> z3.BoolRef:
        """The integer formula for a bitvector/bool formula (side definitions go to self.side)."""
        return self.boolean(f)

    def fresh(self, lo, hi, what="v"):
        self.n += 1
        v = z3.Int(f"ia_{what}{self.n}")
        self.side.append(z3.And(v >= lo, v <= hi))
        self.ivs[v.get_id()] = (lo, hi)
        return v

    def boolean(self, e):
        return self._memo(e.get_id(), lambda: self._boolean(e), e)

    def _memo(self, key, make, hold):
        """Translate once. Each translation records the side definitions it added and the earlier
        translations it used, so that a query gets exactly the definitions its terms need. Keys are
        z3 AST ids, and z3 reuses the id of a freed AST: `hold` (the key's ASTs) is kept alive."""
        if self.stack:
            self.stack[-1].kids.append(key)
        r = self.memo.get(key)
        if r is not None:
            return r
        fr = _Frame(len(self.side))
        self.stack.append(fr)
        try:
            r = make()
        finally:
            self.stack.pop()
        fr.end = len(self.side)
        self.memo[key], self.rec[key] = r, fr
        self.keep.append(hold)
        return r

    def needs(self, keys) -> tuple[set, set]:
        """(indices into self.side, monomial keys) that the translations of `keys` rely on."""
        idx, monos, seen, todo = set(), set(), set(), list(keys)
        while todo:
            k = todo.pop()
            if k in seen or k not in self.rec:
                continue
            seen.add(k)
            fr = self.rec[k]
            idx.update(range(fr.start, fr.end))
            monos.update(fr.monos)
            todo += fr.kids
        return idx, monos

    def lemmas_for(self, monos: set) -> list:
        return [f for (k1, k2), fs in self.lemmas.items() if k1 in monos and k2 in monos for f in fs]

    def _boolean(self, e):
        k = e.decl().kind()
        ch = e.children()
        if k == z3.Z3_OP_TRUE:
            return z3.BoolVal(True)
        if k == z3.Z3_OP_FALSE:
            return z3.BoolVal(False)
        if k == z3.Z3_OP_AND:
            return z3.And(*[self.boolean(c) for c in ch])
        if k == z3.Z3_OP_OR:
            return z3.Or(*[self.boolean(c) for c in ch])
        if k == z3.Z3_OP_NOT:
            return z3.Not(self.boolean(ch[0]))
        if k == z3.Z3_OP_IMPLIES:
            return z3.Implies(self.boolean(ch[0]), self.boolean(ch[1]))
        if k == z3.Z3_OP_XOR:
            return z3.Xor(self.boolean(ch[0]), self.boolean(ch[1]))
        if k == z3.Z3_OP_ITE:
            return z3.If(self.boolean(ch[0]), self.boolean(ch[1]), self.boolean(ch[2]))
        if k in (z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT):
            if z3.is_bool(ch[0]):
                vals = [self.boolean(c) for c in ch]
            elif z3.is_bv(ch[0]):
                reps = [self.rep(c) for c in ch]
                full = 1 << ch[0].size()
                close = max(r[2] for r in reps) - min(r[1] for r in reps) < full
                vals = [r[0] for r in reps] if close else [self.term(c)[0] for c in ch]
            else:
                return self._opaque_bool(e)
            return z3.And(*[a == b for a, b in zip(vals, vals[1:])]) if k == z3.Z3_OP_EQ else z3.Distinct(*vals)
        if k in _UCMP:
            a, b = self.term(ch[0])[0], self.term(ch[1])[0]
            return _UCMP[k](a, b)
        if k in _SCMP:
            a, b = self.signed(ch[0]), self.signed(ch[1])
            return _UCMP[_SCMP[k]](a, b)
        if k == z3.Z3_OP_BSMUL_NO_OVFL:          # only the upper side (bvsmul_noudfl is the lower)
            w = ch[0].size()
            return self.signed(ch[0]) * self.signed(ch[1]) <= (1 << (w - 1)) - 1
        if k == z3.Z3_OP_BSMUL_NO_UDFL:
            w = ch[0].size()
            return self.signed(ch[0]) * self.signed(ch[1]) >= -(1 << (w - 1))
        if k == z3.Z3_OP_BUMUL_NO_OVFL:
            w = ch[0].size()
            return self.term(ch[0])[0] * self.term(ch[1])[0] <= (1 << w) - 1
        if k == z3.Z3_OP_UNINTERPRETED:
            if not ch:
                name = e.decl().name()
                v = self.syms.get((name, "bool"))
                if v is None:
                    v = self.syms[(name, "bool")] = z3.Bool(self._name("ib_", name))
                return v
            return self._uf(e, ch, None)
        return self._opaque_bool(e)

    def _opaque_bool(self, e):
        self.n += 1
        return z3.Bool(f"ia_b{self.n}")

    def signed(self, e):
        """The exact signed value of a bitvector term."""
        return self._exact(e, "s")[0]

    def term(self, e):
        """(int term equal to e's unsigned value, lo, hi)."""
        return self._exact(e, "u")

    def _exact(self, e, view):
        def make():
            w = e.size()
            t, lo, hi = self.rep(e)
            r = self._norm(t, lo, hi, w, 0 if view == "u" else -(1 << (w - 1)))
            self.ivs[r[0].get_id()] = r[1:]
            return r
        return self._memo((view, e.get_id()), make, e)

    def rep(self, e):
        """(t, lo, hi): an integer term congruent to e's value mod 2^w with lo <= t <= hi and
        hi - lo < 2^w, so that it determines the value. Sums and products of such terms are again
        such terms until their interval grows to 2^w; only then is a wrap-around made explicit."""
        def make():
            r = self._rep(e)
            assert r[1] <= r[2] and r[2] - r[1] < (1 << e.size()), (e, r[1], r[2])
            self.ivs[r[0].get_id()] = r[1:]
            return r
        return self._memo(e.get_id(), make, e)

    def _norm(self, t, lo, hi, w, base):
        """The representative in [base, base + 2^w) of a term t in [lo, hi]."""
        full = 1 << w
        klo, khi = (lo - base) // full, (hi - base) // full
        if klo == khi:
            s = klo * full
            return (t - s if s else t), lo - s, hi - s
        if khi == klo + 1:                                   # one boundary inside: a case split
            s1, s2 = klo * full, khi * full
            return z3.If(t >= base + s2, t - s2, t - s1), base, base + full - 1
        q = self.fresh(klo, khi, "wrap")
        r = t - q * full
        self.side.append(z3.And(r >= base, r < base + full))
        return r, base, base + full - 1

    def _fit(self, t, lo, hi, w):
        return (t, lo, hi) if hi - lo < (1 << w) else self._norm(t, lo, hi, w, 0)

    def _rep(self, e):
        w = e.size()
        full = 1 << w
        k = e.decl().kind()
        ch = e.children()
        if k == z3.Z3_OP_BNUM:
            v = e.as_long()
            v = v - full if v >= full // 2 and w > 1 else v       # "negative" constants stay small
            return z3.IntVal(v), v, v
        if ch and k != z3.Z3_OP_UNINTERPRETED and all(z3.is_bv_value(c) for c in ch):
            v = z3.simplify(e)
            if z3.is_bv_value(v):
                return self._rep(v)
        if k == z3.Z3_OP_UNINTERPRETED:
            if not ch:
                name = e.decl().name()
                lo, hi = self._sym_iv(e)
                v = self.syms.get((name, w))
                if v is None:
                    v = self.syms[(name, w)] = z3.Int(self._name("iv_", name))
                    self.side.append(z3.And(v >= lo, v <= hi))
                return v, lo, hi
            return self._uf(e, ch, w)
        if k == z3.Z3_OP_BADD:
            t, lo, hi = self.rep(ch[0])
            for c in ch[1:]:
                u, ulo, uhi = self.rep(c)
                t, lo, hi = self._fit(t + u, lo + ulo, hi + uhi, w)
            r = (t, lo, hi)
        elif k == z3.Z3_OP_BSUB:
            a, alo, ahi = self.rep(ch[0])
            b, blo, bhi = self.rep(ch[1])
            r = self._fit(a - b, alo - bhi, ahi - blo, w)
        elif k == z3.Z3_OP_BNEG:
            a, alo, ahi = self.rep(ch[0])
            r = -a, -ahi, -alo
        elif k == z3.Z3_OP_BNOT:
            a, alo, ahi = self.rep(ch[0])
            r = -1 - a, -1 - ahi, -1 - alo
        elif k == z3.Z3_OP_BMUL:
            t, lo, hi = self.rep(ch[0])
            for c in ch[1:]:
                u, ulo, uhi = self.rep(c)
                corners = (lo * ulo, lo * uhi, hi * ulo, hi * uhi)
                t, lo, hi = self._fit(self.product(t, u), min(corners), max(corners), w)
            r = (t, lo, hi)
        elif k == z3.Z3_OP_BSHL:
            slo = self._shift(ch[1])
            if slo is None:
                return self._opaque(w)
            if slo >= w:
                return z3.IntVal(0), 0, 0
            a, alo, ahi = self.rep(ch[0])
            m = 1 << slo
            r = self._fit(a * m if m > 1 else a, alo * m, ahi * m, w)
        elif k == z3.Z3_OP_CONCAT:
            t, lo, hi = self.rep(ch[0])
            for c in ch[1:]:
                u, ulo, uhi = self.term(c)
                m = 1 << c.size()
                t, lo, hi = t * m + u, lo * m + ulo, hi * m + uhi
            r = self._fit(t, lo, hi, w)
        elif k == z3.Z3_OP_ITE:
            c = self.boolean(ch[0])
            (a, alo, ahi), (b, blo, bhi) = self.rep(ch[1]), self.rep(ch[2])
            if max(ahi, bhi) - min(alo, blo) >= full:
                (a, alo, ahi), (b, blo, bhi) = self.term(ch[1]), self.term(ch[2])
            r = z3.If(c, a, b), min(alo, blo), max(ahi, bhi)
        elif k == z3.Z3_OP_EXTRACT and e.params()[1] == 0:   # low bits: the same representative
            a, alo, ahi = self.rep(ch[0])
            r = self._fit(a, alo, ahi, w)
        else:
            r = self._exact_op(e, k, ch, w, full)
        v = self.twos(e)
        if v and (k in _NONLINEAR and sum(self.rep(c)[1] != self.rep(c)[2] for c in ch) > 1 or
                  r[0].get_id() in self.opaque):
            m = self.fresh(r[1] >> v, r[2] >> v, "k")          # z3 would not see it through the product
            self.side.append(r[0] == m * (1 << v))
        return r

    def product(self, t, u):
        """t * u. A product of non-constants is a monomial (factors in a canonical order); each new one
        gets monotonicity lemmas with the earlier ones that differ from it in one factor, where the
        common factors R are known to be >= 0: y < z -> R*y <= R*z - R, and R*y < R*z -> y < z.
        z3's nonlinear arithmetic does not find these by itself in time."""
        c1, a1 = _factors(t)
        c2, a2 = _factors(u)
        atoms = sorted(a1 + a2, key=lambda x: (x.hash(), x.get_id()))   # structural hash: not the hash seed
        if len(atoms) < 2:
            return t * u
        mono = atoms[0]
        for x in atoms[1:]:
            mono = mono * x
        key = tuple(x.get_id() for x in atoms)
        if key not in self.monos:
            for key2, (mono2, atoms2) in list(self.monos.items()):
                if len(key2) != len(key):
                    continue
                d1, d2 = _minus(atoms, key2), _minus(atoms2, key)
                if len(d1) != 1 or len(d2) != 1:
                    continue
                rest = _minus(atoms2, (d2[0].get_id(),))
                if not all(self.ivs.get(x.get_id(), (-1, 0))[0] >= 0 for x in rest):
                    continue
                R = rest[0]
                for x in rest[1:]:
                    R = R * x
                y, z = d1[0], d2[0]
                self.lemmas[(key, key2)] = [
                    z3.Implies(y < z, mono <= mono2 - R), z3.Implies(z < y, mono2 <= mono - R),
                    z3.Implies(mono < mono2, y < z), z3.Implies(mono2 < mono, z < y)]
            self.monos[key] = (mono, atoms)
        if self.stack:
            self.stack[-1].monos.append(key)
        c = c1 * c2
        return mono if c == 1 else c * mono

    def cdiv(self, t, lo, hi, m):
        return self._cdivmod(t, lo, hi, m)[0]

    def cmod(self, t, lo, hi, m):
        return self._cdivmod(t, lo, hi, m)[1]

    def _cdivmod(self, t, lo, hi, m):
        """floor(t / m) and t mod m for a constant m > 0, as integers q, r with t = m*q + r, 0 <= r < m
        (linear: z3's own div/mod by constants cost far more), simplified where m divides t's
        coefficient."""
        if m == 1:
            return t, z3.IntVal(0)
        c, atoms = _factors(t)
        if not atoms:
            return z3.IntVal(c // m), z3.IntVal(c % m)
        if atoms and c % m == 0:
            rest = atoms[0]
            for x in atoms[1:]:
                rest = rest * x
            return (rest if c == m else (c // m) * rest), z3.IntVal(0)

        def make():
            q = self.fresh(lo // m, hi // m, "q")
            r = self.fresh(0, m - 1, "r")
            self.side.append(t == m * q + r)
            return q, r
        return self._memo(("cdivmod", t.get_id(), m), make, t)

    def _shift(self, amount):
        """A shift amount's value when it is a known constant, else None."""
        _, lo, hi = self.term(amount)
        return lo if lo == hi else None

    def _magic_div(self, prod, s, w):
        """(x * M) >> s, the compiler's division of x by a constant d through a magic multiplier
        M = ceil(2^s / d), as floor(x / d) when that is exact: e = M*d - 2^s >= 0 and x*e < 2^s for
        every x in its interval (then x*M/2^s = x/d + x*e/(d*2^s) stays below the next multiple of 1/d),
        and x*M does not wrap in w bits."""
        if not (z3.is_app(prod) and prod.decl().kind() == z3.Z3_OP_BMUL and prod.num_args() == 2):
            return None
        (x, xlo, xhi), (c, clo, chi) = sorted((self.term(a) for a in prod.children()), key=lambda t: t[1] == t[2])
        if clo != chi or clo <= 0 or xlo < 0 or xhi * clo >= 1 << w:
            return None
        M = clo
        for d in {(1 << s) // M, -(-(1 << s) // M)}:
            e = M * d - (1 << s)
            if d > 0 and e >= 0 and xhi * e < 1 << s:
                return self.cdiv(x, xlo, xhi, d), xlo // d, xhi // d
        return None

    def _divmod(self, a_bv, b_bv):
        """(q, r) with a = b*q + r, 0 <= r < b when b > 0 (unsigned values): explicit, so that b*q
        takes part in the monotonicity lemmas."""
        def make():
            a, alo, ahi = self.term(a_bv)
            b, blo, bhi = self.term(b_bv)
            q = self.fresh(0, ahi // max(blo, 1), "div")
            r = self.fresh(0, max(0, min(ahi, bhi - 1)), "mod")
            self.side.append(z3.Implies(b > 0, z3.And(a == self.product(b, q) + r, r <= b - 1)))
            return q, r
        return self._memo(("divmod", a_bv.get_id(), b_bv.get_id()), make, (a_bv, b_bv))

    def _exact_op(self, e, k, ch, w, full):
        """Operations that need their operands' exact unsigned or signed values."""
        if k == z3.Z3_OP_BLSHR:
            slo = self._shift(ch[1])
            if slo is None:
                return self._opaque(w)
            if slo >= w:
                return z3.IntVal(0), 0, 0
            magic = self._magic_div(ch[0], slo, w)
            if magic is not None:
                return magic
            a, alo, ahi = self.term(ch[0])
            m = 1 << slo
            return self.cdiv(a, alo, ahi, m), alo // m, ahi // m
        if k == z3.Z3_OP_BASHR:                          # floor division of the signed value
            slo = self._shift(ch[1])
            if slo is None:
                return self._opaque(w)
            a, alo, ahi = self._exact(ch[0], "s")
            m = 1 << min(slo, w - 1)
            return self.cdiv(a, alo, ahi, m), alo // m, ahi // m
        if k in (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I, z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I):
            a, alo, ahi = self.term(ch[0])
            b, blo, bhi = self.term(ch[1])
            div = k in (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I)
            if blo == bhi and blo > 0:
                return (self.cdiv(a, alo, ahi, blo), alo // blo, ahi // blo) if div else \
                    (self.cmod(a, alo, ahi, blo), 0, min(ahi, blo - 1))
            q, r = self._divmod(ch[0], ch[1])
            if blo > 0:
                return (q, alo // bhi, ahi // blo) if div else (r, 0, min(ahi, bhi - 1))
            return (z3.If(b == 0, z3.IntVal(full - 1), q), 0, full - 1) if div else (z3.If(b == 0, a, r), 0, ahi)
        if k in (z3.Z3_OP_BSDIV, z3.Z3_OP_BSDIV_I, z3.Z3_OP_BSREM, z3.Z3_OP_BSREM_I):
            _, alo, ahi = self._exact(ch[0], "s")
            _, blo, bhi = self._exact(ch[1], "s")
            if alo >= 0 and blo > 0:                     # both non-negative: unsigned division
                q, r = self._divmod(ch[0], ch[1])
                if k in (z3.Z3_OP_BSDIV, z3.Z3_OP_BSDIV_I):
                    return (q, alo // bhi, ahi // blo)
                return (r, 0, min(ahi, bhi - 1))
            return self._opaque(w)
        if k == z3.Z3_OP_EXTRACT:
            hi_bit, lo_bit = e.params()
            a, alo, ahi = self.term(ch[0])
            m = 1 << lo_bit
            t, tlo, thi = self.cdiv(a, alo, ahi, m), alo // m, ahi // m
            if thi < full:
                return t, tlo, thi
            return self.cmod(t, tlo, thi, full), 0, full - 1
        if k == z3.Z3_OP_ZERO_EXT:
            return self.term(ch[0])
        if k == z3.Z3_OP_SIGN_EXT:
            return self._exact(ch[0], "s")
        if k == z3.Z3_OP_BAND:
            terms = [self.term(c) for c in ch]
            consts = [t for t in terms if t[1] == t[2]]
            other = [t for t in terms if t[1] != t[2]]
            if len(other) == 1 and len(consts) == 1:
                m = consts[0][1]
                a, alo, ahi = other[0]
                if m & (m + 1) == 0:                     # low-bit mask 2^j - 1
                    return (self.cmod(a, alo, ahi, m + 1), 0, min(ahi, m)) if ahi > m else (a, alo, ahi)
                low = (full - 1) ^ m
                if low & (low + 1) == 0:                 # clears the low bits
                    return a - self.cmod(a, alo, ahi, low + 1), 0, ahi
                runs = _runs(m)
                if len(runs) <= 4:                       # runs of ones: sum of (a / 2^s mod 2^n) * 2^s
                    t = sum(self.cmod(self.cdiv(a, alo, ahi, 1 << s), alo >> s, ahi >> s, 1 << n) * (1 << s)
                            for s, n in runs)
                    return t, 0, min(ahi, m)
            r = self._opaque(w, 0, min(t[2] for t in terms))
            self.side += [r[0] <= t[0] for t in terms]                  # a & b <= a, b
            return r
        if k in (z3.Z3_OP_BOR, z3.Z3_OP_BXOR) and len(ch) == 2:
            for x, y in ((ch[0], ch[1]), (ch[1], ch[0])):
                if self.twos(x) >= self.term(y)[2].bit_length():   # no common one bits: | and ^ are +
                    (a, alo, ahi), (b, blo, bhi) = self.rep(x), self.term(y)
                    return self._fit(a + b, alo + blo, ahi + bhi, w)
            if self.ones(ch[0]) & self.ones(ch[1]) == 0:          # (x | 8 where x's bit 3 is known zero)
                (a, alo, ahi), (b, blo, bhi) = self.term(ch[0]), self.term(ch[1])
                return self._fit(a + b, alo + blo, ahi + bhi, w)
        if k == z3.Z3_OP_BOR:
            terms = [self.term(c) for c in ch]
            r = self._opaque(w, max(t[1] for t in terms), min(full - 1, sum(t[2] for t in terms)))
            self.side += [r[0] >= t[0] for t in terms] + [r[0] <= sum(t[0] for t in terms)]   # a, b <= a | b <= a + b
            return r
        if k == z3.Z3_OP_BXOR:
            terms = [self.term(c) for c in ch]
            r = self._opaque(w, 0, min(full - 1, sum(t[2] for t in terms)))
            self.side.append(r[0] <= sum(t[0] for t in terms))
            return r
        return self._opaque(w)

    def _name(self, prefix, name):
        """prefix + name, made unique when symbols of one name but different sorts meet."""
        self.names[name] = self.names.get(name, 0) + 1
        return prefix + name + ("" if self.names[name] == 1 else f"#{self.names[name]}")

    def _opaque(self, w, lo=0, hi=None):
        hi = (1 << w) - 1 if hi is None else hi
        v = self.fresh(lo, hi, "o")
        self.opaque.add(v.get_id())
        return v, lo, hi

    def _uf(self, e, ch, w):
        """f(args) -> f_int(int args): congruence is kept (equal values, equal results)."""
        d = e.decl()
        key = (d.name(), tuple(str(d.domain(i)) for i in range(d.arity())), str(d.range()))
        f = self.ufs.get(key)
        if f is None:
            doms = [z3.BoolSort() if z3.is_bool(c) else z3.IntSort() for c in ch]
            f = self.ufs[key] = z3.Function(self._name("if_", d.name()), *doms,
                                            z3.BoolSort() if w is None else z3.IntSort())
        args = [self.boolean(c) if z3.is_bool(c) else self.term(c)[0] for c in ch]
        r = f(*args)
        if w is None:
            return r
        lo, hi = self._sym_iv(e)
        self.side.append(z3.And(r >= lo, r <= hi))
        return r, lo, hi


_NONLINEAR = {z3.Z3_OP_BMUL, z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I, z3.Z3_OP_BSREM, z3.Z3_OP_BSREM_I,
              z3.Z3_OP_BSMOD, z3.Z3_OP_BSMOD_I}
_UCMP = {z3.Z3_OP_ULEQ: lambda a, b: a <= b, z3.Z3_OP_ULT: lambda a, b: a < b,
         z3.Z3_OP_UGEQ: lambda a, b: a >= b, z3.Z3_OP_UGT: lambda a, b: a > b}
_SCMP = {z3.Z3_OP_SLEQ: z3.Z3_OP_ULEQ, z3.Z3_OP_SLT: z3.Z3_OP_ULT, z3.Z3_OP_SGEQ: z3.Z3_OP_UGEQ,
         z3.Z3_OP_SGT: z3.Z3_OP_UGT}


class _Frame:
    __slots__ = ("start", "end", "kids", "monos")

    def __init__(self, start):
        self.start, self.end, self.kids, self.monos = start, start, [], []


def _runs(m):
    """[(shift, length)] of the runs of one bits of m."""
    out, s = [], 0
    while m:
        if m & 1:
            n = (m ^ (m + 1)).bit_length() - 1          # trailing ones
            out.append((s, n))
            m >>= n
            s += n
        else:
            z = (m & -m).bit_length() - 1
            m >>= z
            s += z
    return out


def _factors(t):
    """(constant coefficient, non-constant factors) of an integer product term."""
    if z3.is_int_value(t):
        return t.as_long(), []
    if z3.is_mul(t):
        c, out = 1, []
        for x in t.children():
            c2, a2 = _factors(x)
            c, out = c * c2, out + a2
        return c, out
    return 1, [t]


def _minus(atoms, key):
    """The atoms left after removing one occurrence of each id in key."""
    left = list(key)
    out = []
    for x in atoms:
        if x.get_id() in left:
            left.remove(x.get_id())
        else:
            out.append(x)
    return out


def _flip(rel):
    return {"ule": "uge", "ult": "ugt", "uge": "ule", "ugt": "ult", "sle": "sge", "slt": "sgt", "sge": "sle",
            "sgt": "slt", "eq": "eq"}[rel]


def _is_sym(x):
    return z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED and z3.is_bv(x)


def _is_leaf(x):
    """A symbol or an uninterpreted function's value: what learn() keeps intervals for."""
    return z3.is_app(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED and z3.is_bv(x)


def _strip_zext(x):
    while x.decl().kind() == z3.Z3_OP_ZERO_EXT:
        x = x.arg(0)
    return x


def _conjuncts(f, out):
    if z3.is_and(f):
        for c in f.children():
            _conjuncts(c, out)
    else:
        out.append(f)
