"""Instruction semantics of the PTX emulator. Each handler runs one instruction for the threads of
mask m (None: every thread of the batch) and returns True when it set the PCs itself."""
from __future__ import annotations

import numpy as np

from kreg.checker.emulator import fpround as F
from kreg.checker.ptx import parse as P
from kreg.checker.emulator.ops import BITS, DT, HALF, INT, IROUND, UINT, _ftz32, _isfloat, _mode, _signed, op



def _bits(t):
    return max(BITS[t], 8)


# ---- floating point helpers -------------------------------------------------------------------------

def _halves(x):
    x = np.asarray(x).astype(np.uint32)
    return (x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)


def _pack(lo, hi):
    return np.asarray(lo).astype(np.uint32) | (np.asarray(hi).astype(np.uint32) << np.uint32(16))


def _to64(bits, fmt):
    return F.to_f64(bits, fmt)


def _canon_half(bits, fmt):
    v = _to64(bits, fmt)
    return np.where(np.isnan(v), np.uint16(0x7FFF), np.asarray(bits).astype(np.uint16))


def _relu_half(bits, fmt):
    v = _to64(bits, fmt)
    return np.where(np.isnan(v), np.uint16(0x7FFF), np.where(v < 0, np.uint16(0), np.asarray(bits).astype(np.uint16)))


def _half_arith(kind, srcs, fmt, mode, ins):
    """add/sub/mul/fma/min/max on f16/bf16 bit patterns, exactly rounded."""
    v = [_to64(s, fmt) for s in srcs]
    if kind == "add":
        r = F.add_exact(v[0], v[1], fmt, mode)
    elif kind == "sub":
        r = F.add_exact(v[0], -v[1], fmt, mode)
    elif kind == "mul":
        r = F.mul_exact(v[0], v[1], fmt, mode)
    elif kind == "fma":
        r = F.fma_exact(v[0], v[1], v[2], fmt, mode)
    elif kind in ("min", "max"):
        r = _minmax_bits(srcs[0], srcs[1], v[0], v[1], kind, 16, ins.has("NaN"))
        return r.astype(np.uint16)
    else:
        raise ValueError(kind)
    r = _canon_half(r, fmt)
    if ins.has("relu"):
        r = _relu_half(r, fmt)
    if ins.has("sat"):
        rv = _to64(r, fmt)
        r = np.where(np.isnan(rv) | (rv < 0), np.uint16(0), np.where(rv > 1, F.from_f64_rn(1.0, fmt), r))
    return r.astype(np.uint16)


def _minmax_bits(ab, bb, a, b, kind, nbits, nan_prop):
    """IEEE-754-2008 minNum/maxNum on bit patterns (ab, bb) with values (a, b); -0 < +0."""
    ut = UINT[nbits]
    ab, bb = np.asarray(ab).astype(ut), np.asarray(bb).astype(ut)
    canon = ut((1 << (nbits - 1)) - 1)
    an, bn = np.isnan(a), np.isnan(b)
    if kind == "min":
        pick_a = (a < b) | ((a == b) & (ab >> ut(nbits - 1) == 1))
    else:
        pick_a = (a > b) | ((a == b) & (ab >> ut(nbits - 1) == 0))
    r = np.where(pick_a, ab, bb)
    r = np.where(an & ~bn, bb, np.where(bn & ~an, ab, r))
    nan_out = (an & bn) | (nan_prop & (an | bn))
    return np.where(nan_out, canon, r)


def _float_binary(self, ins, m, kind):
    t = ins.type
    mode = _mode(ins)
    srcs = [self.get(x, t) for x in ins.args[1:]]
    if t == "f32":
        v = [np.asarray(s, np.float32) for s in srcs]
        if ins.has("ftz"):
            v = [_ftz32(x) for x in v]
        if kind in ("min", "max"):
            r = _minmax_bits(v[0].view(np.uint32), v[1].view(np.uint32), v[0], v[1], kind, 32,
                             ins.has("NaN")).view(np.float32)
        elif mode == "rn" and kind in ("add", "sub", "mul"):
            r = v[0] + v[1] if kind == "add" else v[0] - v[1] if kind == "sub" else v[0] * v[1]
        elif kind == "fma":
            r = F.fma_exact(v[0], v[1], v[2], "f32", mode).view(np.float32)
        elif kind in ("add", "sub"):
            r = F.add_exact(v[0], v[1] if kind == "add" else -v[1], "f32", mode).view(np.float32)
        elif kind == "mul":
            r = F.mul_exact(v[0], v[1], "f32", mode).view(np.float32)
        else:
            raise self.err("unsupported", f"{kind}.f32")
        if ins.has("ftz"):
            r = _ftz32(r)
        if ins.has("sat"):
            r = np.where(np.isnan(r) | (r <= 0), np.float32(0), np.minimum(r, np.float32(1)))
        if ins.has("relu"):
            r = np.where(np.isnan(r), r, np.maximum(r, np.float32(0)))
        self.put(ins.args[0], F.canon_f32(r), t, m)
    elif t == "f64":
        v = [np.asarray(s, np.float64) for s in srcs]
        if mode != "rn":
            raise self.err("unsupported", f"{kind}.{mode}.f64")
        if kind in ("min", "max"):
            r = _minmax_bits(v[0].view(np.uint64), v[1].view(np.uint64), v[0], v[1], kind, 64,
                             ins.has("NaN")).view(np.float64)
        elif kind == "fma":
            r = _fma64(v[0], v[1], v[2])
        else:
            r = v[0] + v[1] if kind == "add" else v[0] - v[1] if kind == "sub" else v[0] * v[1]
        self.put(ins.args[0], r, t, m)
    elif t in HALF:
        self.put(ins.args[0], _half_arith(kind, srcs, t, mode, ins), t, m)
    elif t in ("f16x2", "bf16x2"):
        fmt = t[:-2]
        parts = [_halves(s) for s in srcs]
        lo = _half_arith(kind, [p[0] for p in parts], fmt, mode, ins)
        hi = _half_arith(kind, [p[1] for p in parts], fmt, mode, ins)
        self.put(ins.args[0], _pack(lo, hi), t, m)
    else:
        raise self.err("unsupported", f"float type {t}")


def _fma64(a, b, c):
    """Correctly rounded f64 fma (exact rational arithmetic per element; rare in kernels)."""
    from fractions import Fraction
    a, b, c = np.broadcast_arrays(a, b, c)
    out = np.empty(a.shape, np.float64)
    for i in np.ndindex(a.shape):
        x, y, z = float(a[i]), float(b[i]), float(c[i])
        if not all(np.isfinite([x, y, z])):
            out[i] = x * y + z
        else:
            out[i] = float(Fraction(x) * Fraction(y) + Fraction(z))   # Fraction -> float rounds to nearest even
    return out


# ---- integer helpers --------------------------------------------------------------------------------

def _mulhi_u64(a, b):
    a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    al, ah, bl, bh = a & m32, a >> s32, b & m32, b >> s32
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    return hh + (lh >> s32) + (hl >> s32) + (mid >> s32)


def _mul(a, b, t, mode):
    """mul.lo / .hi / .wide for integer type t; returns (value, result type)."""
    bits = _bits(t)
    if mode == "wide":
        wt = ("s" if _signed(t) else "u") + str(2 * bits)
        return a.astype(DT[wt]) * b.astype(DT[wt]), wt
    if mode == "hi":
        if bits < 64:
            wt = INT[2 * bits] if _signed(t) else UINT[2 * bits]
            return (a.astype(wt) * b.astype(wt)) >> bits, t
        hi = _mulhi_u64(np.asarray(a).view(np.uint64) if _signed(t) else a,
                        np.asarray(b).view(np.uint64) if _signed(t) else b)
        if _signed(t):
            hi = hi - np.where(np.asarray(a) < 0, np.asarray(b).view(np.uint64), 0).astype(np.uint64) \
                - np.where(np.asarray(b) < 0, np.asarray(a).view(np.uint64), 0).astype(np.uint64)
            return hi.view(np.int64), t
        return hi, t
    return a * b, t


def _popcount(a):
    if hasattr(np, "bitwise_count"):          # NumPy >= 2.0
        return np.bitwise_count(a)
    a = np.asarray(a, np.uint64)
    a = a - ((a >> np.uint64(1)) & np.uint64(0x5555555555555555))
    a = (a & np.uint64(0x3333333333333333)) + ((a >> np.uint64(2)) & np.uint64(0x3333333333333333))
    a = (a + (a >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (a * np.uint64(0x0101010101010101)) >> np.uint64(56)


def _shift_amount(b, bits):
    b = np.asarray(b).astype(np.uint64)
    return np.minimum(b, np.uint64(bits))


# ---- arithmetic -------------------------------------------------------------------------------------

@op("add", "sub")
def _add(self, ins, m, *_):
    t = ins.type
    if _isfloat(t):
        return _float_binary(self, ins, m, ins.op)
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    if ins.has("cc") or ins.op in ("addc", "subc"):
        return _add_cc(self, ins, m, a, b, t)
    if ins.has("sat"):
        r = np.clip(a.astype(np.int64) + b.astype(np.int64) if ins.op == "add"
                    else a.astype(np.int64) - b.astype(np.int64), -2 ** 31, 2 ** 31 - 1)
    else:
        r = a + b if ins.op == "add" else a - b
    self.put(ins.args[0], r, t, m)


@op("addc", "subc")
def _addc(self, ins, m, *_):
    t = ins.type
    return _add_cc(self, ins, m, self.get(ins.args[1], t), self.get(ins.args[2], t), t)


def _add_cc(self, ins, m, a, b, t):
    bits = _bits(t)
    ua, ub = np.asarray(a).astype(UINT[bits]), np.asarray(b).astype(UINT[bits])
    cf = getattr(self, "cf", np.zeros(self.N, np.uint64))
    carry_in = cf if ins.op in ("addc", "subc") else np.uint64(0)
    if ins.op in ("add", "addc"):
        s = ua.astype(np.uint64) + ub.astype(np.uint64) + carry_in
        if bits == 32:
            r, co = s & np.uint64(0xFFFFFFFF), s >> np.uint64(32)
        else:
            r = ua + ub + carry_in
            co = ((r < ua) | ((carry_in == 1) & (r == ua))).astype(np.uint64)
    else:
        r = (ua.astype(np.uint64) - ub.astype(np.uint64) - carry_in)
        if bits == 32:
            co = (r >> np.uint64(63)) & np.uint64(1)
            r = r & np.uint64(0xFFFFFFFF)
        else:
            co = ((ua < ub) | ((carry_in == 1) & (ua == ub))).astype(np.uint64)
    if ins.has("cc"):
        self.cf = np.where(m, co, cf) if m is not None else np.broadcast_to(co, (self.N,)).astype(np.uint64)
    self.put(ins.args[0], np.asarray(r).astype(UINT[bits]).view(DT[t]), t, m)


@op("mul")
def _mulop(self, ins, m, *_):
    t = ins.type
    if _isfloat(t):
        return _float_binary(self, ins, m, "mul")
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    mode = "wide" if ins.has("wide") else "hi" if ins.has("hi") else "lo"
    r, rt = _mul(a, b, t, mode)
    self.put(ins.args[0], r, rt, m)


@op("mad", "fma")
def _mad(self, ins, m, *_):
    t = ins.type
    if _isfloat(t):
        return _float_binary(self, ins, m, "fma")
    if ins.has("cc") or ins.op == "madc":
        raise self.err("unsupported", "mad.cc / madc")
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    mode = "wide" if ins.has("wide") else "hi" if ins.has("hi") else "lo"
    r, rt = _mul(a, b, t, mode)
    c = self.get(ins.args[3], rt)
    if ins.has("sat"):
        r = np.clip(r.astype(np.int64) + c.astype(np.int64), -2 ** 31, 2 ** 31 - 1)
    else:
        r = r.astype(DT[rt]) + c
    self.put(ins.args[0], r, rt, m)


@op("mul24", "mad24")
def _mul24(self, ins, m, *_):
    t = ins.type
    a, b = self.get(ins.args[1], t).astype(np.int64), self.get(ins.args[2], t).astype(np.int64)
    if _signed(t):
        a, b = (a << 40) >> 40, (b << 40) >> 40
    else:
        a, b = a & 0xFFFFFF, b & 0xFFFFFF
    p = a * b
    r = (p >> 16) if ins.has("hi") else p
    if ins.op == "mad24":
        r = r + self.get(ins.args[3], t).astype(np.int64)
    self.put(ins.args[0], (r & 0xFFFFFFFF).astype(np.uint32).view(DT[t]), t, m)


@op("div", "rem")
def _div(self, ins, m, *_):
    t = ins.type
    if _isfloat(t):
        mode = _mode(ins)
        if t not in ("f32", "f64") or mode != "rn":
            raise self.err("unsupported", f"{ins.op}.{mode}.{t}")
        a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
        if ins.has("ftz") and t == "f32":
            a, b = _ftz32(a), _ftz32(b)
        r = a / b      # div.rn is IEEE; div.approx / div.full are within 2 ulp of it (documented approximation)
        if t == "f32":
            r = F.canon_f32(_ftz32(r) if ins.has("ftz") else r)
        return self.put(ins.args[0], r, t, m)
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    bits = _bits(t)
    zero = b == 0
    bs = np.where(zero, 1, b).astype(b.dtype)
    if _signed(t):
        a64, b64 = a.astype(np.int64), bs.astype(np.int64)
        if bits == 64:                   # magnitudes as uint64: |MININT| = 2^63 fits there
            ua = np.where(a < 0, np.uint64(0) - a.view(np.uint64), a.view(np.uint64))
            ub = np.where(bs < 0, np.uint64(0) - bs.view(np.uint64), bs.view(np.uint64))
            uq = ua // ub
            q = np.where((a < 0) != (bs < 0), np.uint64(0) - uq, uq).view(np.int64)
            r = a - q * bs
        else:
            qq = np.abs(a64) // np.abs(b64)
            q = np.where((a64 < 0) != (b64 < 0), -qq, qq)
            r = a64 - q * b64
            q, r = q.astype(DT[t]), r.astype(DT[t])
    else:
        q, r = a // bs, a % bs
    if ins.op == "div":
        res = np.where(zero, np.array(-1).astype(DT[t]) if _signed(t) else DT[t](np.iinfo(DT[t]).max), q)
    else:
        res = np.where(zero, a, r)
    self.put(ins.args[0], res.astype(DT[t]), t, m)


@op("abs", "neg")
def _absneg(self, ins, m, *_):
    t = ins.type
    a = self.get(ins.args[1], t)
    if _isfloat(t):
        bits = BITS[t]
        u = np.asarray(a).view(UINT[bits]) if t in ("f32", "f64") else np.asarray(a)
        if t in ("f16x2", "bf16x2"):
            sign = np.uint32(0x80008000)
        else:
            sign = UINT[bits](1 << (bits - 1))
        if t == "f32" and ins.has("ftz"):
            u = _ftz32(u.view(np.float32)).view(np.uint32)
        r = (u & ~sign) if ins.op == "abs" else (u ^ sign)
        self.put(ins.args[0], r.view(DT[t]) if t in ("f32", "f64") else r, t, m)
    else:
        self.put(ins.args[0], np.abs(a) if ins.op == "abs" else -a, t, m)


@op("min", "max")
def _minmax(self, ins, m, *_):
    t = ins.type
    if _isfloat(t):
        return _float_binary(self, ins, m, ins.op)
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    self.put(ins.args[0], np.minimum(a, b) if ins.op == "min" else np.maximum(a, b), t, m)


@op("and", "or", "xor")
def _logic(self, ins, m, *_):
    t = ins.type
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[ins.op]
    self.put(ins.args[0], f(a, b), t, m)


@op("not", "cnot")
def _not(self, ins, m, *_):
    t = ins.type
    a = self.get(ins.args[1], t)
    if ins.op == "not":
        r = ~a if t != "pred" else ~np.asarray(a, bool)
    else:
        r = (a == 0).astype(DT[t])
    self.put(ins.args[0], r, t, m)


@op("shl", "shr")
def _shift(self, ins, m, *_):
    t = ins.type
    bits = _bits(t)
    a = self.get(ins.args[1], t)
    n = _shift_amount(self.get(ins.args[2], "u32"), bits)
    nn = np.minimum(n, np.uint64(bits - 1)).astype(DT[t])
    big = n >= bits
    if ins.op == "shl":
        r = np.where(big, DT[t](0), a << nn)
    elif _signed(t):
        r = a >> nn     # arithmetic; for n >= bits the sign fill equals a >> (bits-1)
    else:
        r = np.where(big, DT[t](0), a >> nn)
    self.put(ins.args[0], np.asarray(r).astype(DT[t]), t, m)


@op("shf")
def _shf(self, ins, m, *_):
    a = self.get(ins.args[1], "b32").astype(np.uint64)
    b = self.get(ins.args[2], "b32").astype(np.uint64)
    c = self.get(ins.args[3], "u32").astype(np.uint64)
    n = c & np.uint64(31) if ins.has("wrap") else np.minimum(c, np.uint64(32))
    v = (b << np.uint64(32)) | a
    if ins.has("l"):
        r = (v << n) >> np.uint64(32)
    else:
        r = v >> n
    self.put(ins.args[0], (r & np.uint64(0xFFFFFFFF)).astype(np.uint32), "b32", m)


@op("popc", "clz", "brev")
def _bitcount(self, ins, m, *_):
    t = ins.type
    bits = _bits(t)
    a = np.asarray(self.get(ins.args[1], t)).astype(np.uint64)
    if ins.op == "popc":
        r = _popcount(a).astype(np.uint32)
        return self.put(ins.args[0], r, "u32", m)
    if ins.op == "clz":
        r = np.full(a.shape, bits, np.uint32)
        for i in range(bits):
            r = np.where((r == bits) & ((a >> np.uint64(bits - 1 - i)) & np.uint64(1) == 1), np.uint32(i), r)
        return self.put(ins.args[0], r, "u32", m)
    r = np.zeros(a.shape, np.uint64)
    for i in range(bits):
        r |= ((a >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
    self.put(ins.args[0], r.astype(UINT[bits]), t, m)


@op("bfind")
def _bfind(self, ins, m, *_):
    t = ins.type
    bits = _bits(t)
    a = np.asarray(self.get(ins.args[1], t))
    u = a.astype(UINT[bits]) if not _signed(t) else np.where(a < 0, ~a, a).astype(UINT[bits])
    u = u.astype(np.uint64)
    pos = np.full(u.shape, -1, np.int64)
    for i in range(bits):
        pos = np.where((u >> np.uint64(i)) & np.uint64(1) == 1, i, pos)
    r = np.where(pos < 0, 0xFFFFFFFF, (bits - 1 - pos) if ins.has("shiftamt") else pos)
    self.put(ins.args[0], r.astype(np.uint32), "u32", m)


@op("szext", "bmsk")
def _szext_bmsk(self, ins, m, *_):
    t = ins.type
    a = np.asarray(self.get(ins.args[1], t)).astype(np.uint32).astype(np.uint64)
    b = np.asarray(self.get(ins.args[2], "u32")).astype(np.uint64)
    if ins.has("wrap"):
        b = b & np.uint64(31)
    else:
        b = np.minimum(b, np.uint64(32))
    if ins.op == "bmsk":
        pos = a & np.uint64(31) if ins.has("wrap") else np.minimum(a, np.uint64(32))
        r = (((np.uint64(1) << b) - np.uint64(1)) << pos) & np.uint64(0xFFFFFFFF)
        return self.put(ins.args[0], r.astype(np.uint32), "b32", m)
    mask = (np.uint64(1) << b) - np.uint64(1)
    r = a & mask
    if _signed(t):
        sign = np.where(b > 0, (a >> np.maximum(b, np.uint64(1)) - np.uint64(1)) & np.uint64(1), np.uint64(0))
        r = np.where(sign == 1, r | (~mask & np.uint64(0xFFFFFFFF)), r)
    self.put(ins.args[0], r.astype(np.uint32).view(DT[t]), t, m)


@op("bfe")
def _bfe(self, ins, m, *_):
    t = ins.type
    bits = _bits(t)
    a = np.asarray(self.get(ins.args[1], t)).astype(UINT[bits]).astype(np.uint64)
    pos = self.get(ins.args[2], "u32").astype(np.int64) & 0xFF
    ln = self.get(ins.args[3], "u32").astype(np.int64) & 0xFF
    pos, ln = np.broadcast_arrays(pos, ln)
    shifted = a >> np.minimum(pos, 63).astype(np.uint64)
    shifted = np.where(pos >= bits, np.uint64(0), shifted)
    mask = np.where(ln >= 64, np.uint64(2 ** 64 - 1), (np.uint64(1) << np.minimum(ln, 63).astype(np.uint64)) - np.uint64(1))
    r = shifted & mask
    if _signed(t):
        sbit_pos = np.minimum(pos + ln - 1, bits - 1)
        sbit = (a >> sbit_pos.astype(np.uint64)) & np.uint64(1)
        sbit = np.where(ln == 0, np.uint64(0), sbit)
        ext = np.where((sbit == 1) & (ln < bits), ~mask, np.uint64(0))
        r = r | ext
    self.put(ins.args[0], r.astype(UINT[bits]).view(DT[t]), t, m)


@op("bfi")
def _bfi(self, ins, m, *_):
    t = ins.type
    bits = _bits(t)
    a = np.asarray(self.get(ins.args[1], t)).astype(np.uint64)
    b = np.asarray(self.get(ins.args[2], t)).astype(np.uint64)
    pos = np.asarray(self.get(ins.args[3], "u32")).astype(np.int64) & 0xFF
    ln = np.asarray(self.get(ins.args[4], "u32")).astype(np.int64) & 0xFF
    ln = np.minimum(ln, np.maximum(bits - pos, 0))
    mask = ((np.uint64(1) << ln.astype(np.uint64)) - np.uint64(1)) << np.minimum(pos, 63).astype(np.uint64)
    mask = np.where(pos >= bits, np.uint64(0), mask)
    r = (b & ~mask) | ((a << np.minimum(pos, 63).astype(np.uint64)) & mask)
    self.put(ins.args[0], r.astype(UINT[bits]), t, m)


@op("prmt")
def _prmt(self, ins, m, *_):
    a = np.asarray(self.get(ins.args[1], "b32")).astype(np.uint64)
    b = np.asarray(self.get(ins.args[2], "b32")).astype(np.uint64)
    c = np.asarray(self.get(ins.args[3], "b32")).astype(np.uint64)
    mode = next((x for x in ins.mods if x in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
    src = a | (b << np.uint64(32))
    byte = [(src >> np.uint64(8 * i)) & np.uint64(0xFF) for i in range(8)]
    r = np.zeros(np.broadcast(a, b, c).shape, np.uint64)
    if mode is None:
        for i in range(4):
            sel = (c >> np.uint64(4 * i)) & np.uint64(0xF)
            v = np.choose((sel & np.uint64(7)).astype(np.int64), byte)
            sign = np.where((v >> np.uint64(7)) & np.uint64(1) == 1, np.uint64(0xFF), np.uint64(0))
            v = np.where(sel & np.uint64(8), sign, v)
            r |= v << np.uint64(8 * i)
    else:
        s = (c & np.uint64(3)).astype(np.int64)
        table = {"f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
                 "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
                 "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
                 "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
                 "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
                 "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]]}[mode]
        for i in range(4):
            idx = np.choose(s, [row[i] for row in table])
            r |= np.choose(idx, byte) << np.uint64(8 * i)
    self.put(ins.args[0], r.astype(np.uint32), "b32", m)


@op("lop3")
def _lop3(self, ins, m, *_):
    a, b, c = (np.asarray(self.get(x, "b32")) for x in ins.args[1:4])
    lut = int(ins.args[4].value)
    r = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
    for i in range(8):
        if lut >> i & 1:
            r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    d = ins.args[0]
    if isinstance(d, P.PredPair):       # lop3.{or,and}.b32 d|p, a, b, c, immLut, q: p = (d != 0) BoolOp q
        f = np.logical_and if "and" in ins.mods else np.logical_or
        self.put(d.a, r, "b32", m)
        self.put(d.b, f(r != 0, self.get(ins.args[5], "pred")), "pred", m)
        return
    self.put(d, r, "b32", m)


@op("sad")
def _sad(self, ins, m, *_):
    t = ins.type
    a, b, c = (self.get(x, t).astype(np.int64) for x in ins.args[1:4])
    self.put(ins.args[0], (np.abs(a - b) + c).astype(DT[t]), t, m)


@op("copysign")
def _copysign(self, ins, m, *_):
    t = ins.type
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    self.put(ins.args[0], np.copysign(b, a), t, m)


@op("testp")
def _testp(self, ins, m, *_):
    t = ins.type
    v = np.asarray(self.get(ins.args[1], t))
    a = np.abs(v)
    tiny = np.finfo(v.dtype).tiny
    kind = next(x for x in ins.mods if x in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
    r = {"finite": np.isfinite(v), "infinite": np.isinf(v), "number": ~np.isnan(v), "notanumber": np.isnan(v),
         "normal": np.isfinite(v) & (a >= tiny), "subnormal": (a < tiny) & (a > 0)}[kind]
    self.put(ins.args[0], r, "pred", m)


# ---- transcendental and other approximate float ops ----------------------------------------------------

def _unary_float(self, ins, m, fn, approx):
    t = ins.type
    if t == "f32":
        v = np.asarray(self.get(ins.args[1], t), np.float32)
        if ins.has("ftz"):
            v = _ftz32(v)
        if approx:
            r = F.from_f64_rn(fn(v.astype(np.float64)), "f32").view(np.float32)
        else:
            r = fn(v)
        if ins.has("ftz"):
            r = _ftz32(r)
        return self.put(ins.args[0], F.canon_f32(r), t, m)
    if t == "f64":
        return self.put(ins.args[0], fn(np.asarray(self.get(ins.args[1], t), np.float64)), t, m)
    if t in HALF:
        v = _to64(self.get(ins.args[1], t), t)
        return self.put(ins.args[0], _canon_half(F.from_f64_rn(fn(v), t), t), t, m)
    if t in ("f16x2", "bf16x2"):
        fmt = t[:-2]
        lo, hi = _halves(self.get(ins.args[1], t))
        r = [_canon_half(F.from_f64_rn(fn(_to64(h, fmt)), fmt), fmt) for h in (lo, hi)]
        return self.put(ins.args[0], _pack(*r), t, m)
    raise self.err("unsupported", f"{ins.op}.{t}")


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


_INV_2PI = np.float32(0.15915494)


def _turns(x):
    """sin/cos.approx first reduce the argument to turns, x * f32(1/2pi) rounded toward zero in f32: on the
    H100 this reproduces the error growth with |x| (max error 1.2e-6 -> 3.2e-7 over |x| <= 10)."""
    return F.mul_exact(np.asarray(x, np.float32), _INV_2PI, "f32", "rz").view(np.float32).astype(np.float64)


TURNS = {"sin": lambda x: np.sin(2 * np.pi * _turns(x)), "cos": lambda x: np.cos(2 * np.pi * _turns(x))}
APPROX = {"rsqrt": _rsqrt, "ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos, "tanh": np.tanh}



@op("rsqrt", "ex2", "lg2", "sin", "cos", "tanh")
def _approx(self, ins, m, *_):
    if ins.op in TURNS and ins.type == "f32":
        return _unary_float(self, ins, m, TURNS[ins.op], True)
    _unary_float(self, ins, m, APPROX[ins.op], True)


@op("sqrt", "rcp")
def _sqrt(self, ins, m, *_):
    mode = _mode(ins)
    if mode != "rn":
        raise self.err("unsupported", f"{ins.op}.{mode}")
    if ins.op == "sqrt":
        fn = np.sqrt
    else:
        def fn(x):
            return (np.asarray(1, x.dtype) / x)
    _unary_float(self, ins, m, fn, False)


# ---- comparisons and selection ----------------------------------------------------------------------

CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}


def _compare(kind, a, b, isf):
    if not isf:
        return CMP[kind](a, b)
    nan = np.isnan(a) | np.isnan(b)
    if kind == "num":
        return ~nan
    if kind == "nan":
        return nan
    if kind.endswith("u") and kind[:-1] in CMP:
        return CMP[kind[:-1]](a, b) | nan
    return CMP[kind](a, b) & ~nan


def _cmp_values(self, ins, t):
    a, b = self.get(ins.args[1], t), self.get(ins.args[2], t)
    if t in HALF:
        a, b = _to64(a, t), _to64(b, t)
    elif t == "f32" and ins.has("ftz"):
        a, b = _ftz32(a), _ftz32(b)
    return a, b


@op("setp", "set")
def _setp(self, ins, m, *_):
    t = ins.type
    kind = ins.mods[0]
    if t in ("f16x2", "bf16x2"):
        raise self.err("unsupported", "setp on packed halves")
    isf = _isfloat(t)
    a, b = _cmp_values(self, ins, t)
    r = _compare(kind, a, b, isf)
    comb = next((x for x in ins.mods[1:] if x in ("and", "or", "xor")), None)
    f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(comb)
    c = self.get(ins.args[3], "pred") if comb else None
    if ins.op == "set":
        dt = ins.types[0]
        rr = f(r, c) if f else r
        val = np.where(rr, np.float32(1.0), np.float32(0.0)) if dt == "f32" else \
            np.where(rr, DT[dt](np.iinfo(DT[dt]).max) if dt[0] in "ub" else DT[dt](-1), DT[dt](0))
        return self.put(ins.args[0], val, dt, m)
    d = ins.args[0]
    if isinstance(d, P.PredPair):
        self.put(d.a, f(r, c) if f else r, "pred", m)
        self.put(d.b, f(~r, c) if f else ~r, "pred", m)
    else:
        self.put(d, f(r, c) if f else r, "pred", m)


@op("selp")
def _selp(self, ins, m, *_):
    t = ins.type
    p = self.get(ins.args[3], "pred")
    self.put(ins.args[0], np.where(p, self.get(ins.args[1], t), self.get(ins.args[2], t)), t, m)


@op("slct")
def _slct(self, ins, m, *_):
    dt, ct = ins.types[0], ins.types[1]
    c = self.get(ins.args[3], ct)
    if ct == "f32" and ins.has("ftz"):
        c = _ftz32(c)
    self.put(ins.args[0], np.where(c >= 0, self.get(ins.args[1], dt), self.get(ins.args[2], dt)), dt, m)


# ---- moves and conversions --------------------------------------------------------------------------

@op("mov")
def _mov(self, ins, m, *_):
    t = ins.type
    d, s = ins.args[0], ins.args[1]
    if isinstance(d, P.Vec):          # unpack: mov.b32 {lo, hi}, %r
        n = len(d.items)
        w = _bits(t) // n
        v = np.asarray(self.get(s, t)).astype(np.uint64)
        for i, item in enumerate(d.items):
            part = (v >> np.uint64(i * w)) & np.uint64((1 << w) - 1)
            self.put(item, part.astype(UINT[w]), f"b{w}", m)
        return
    if isinstance(s, P.Vec):          # pack: mov.b32 %r, {lo, hi}
        n = len(s.items)
        w = _bits(t) // n
        v = np.uint64(0)
        for i, item in enumerate(s.items):
            v = v | (np.asarray(self.get(item, f"b{w}")).astype(np.uint64) << np.uint64(i * w))
        return self.put(d, np.asarray(v).astype(UINT[_bits(t)]), f"b{_bits(t)}", m)
    if isinstance(s, P.Sym):
        return self.put(d, np.uint64(self.sym_addr(s.name, None)), "u64", m)
    self.put(d, self.get(s, t), t, m)


def _int_to_float(v, st, dfmt, mode):
    """Integer values of type st to the bit patterns (or f32/f64 values) of dfmt, exactly rounded."""
    if _bits(st) == 64:
        hi = (v.astype(np.int64) >> 32).astype(np.float64) * 2.0 ** 32 if _signed(st) else \
            (v.astype(np.uint64) >> np.uint64(32)).astype(np.float64) * 2.0 ** 32
        lo = (v.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.float64)
        s, e = F.two_sum(hi, lo)
    else:
        s, e = v.astype(np.float64), 0.0
    if dfmt == "f64":
        if _bits(st) == 64 and mode != "rn":
            raise ValueError("directed rounding of 64-bit integers to f64")
        return v.astype(np.float64) if mode == "rn" else s
    bits = F.round_exact(s, e, dfmt, mode)
    return bits.view(np.float32) if dfmt == "f32" else bits


def _float_to_int(x, dt, rnd, ftz):
    x = np.asarray(x, np.float64)
    r = IROUND[rnd](x)
    bits = _bits(dt)
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if _signed(dt) else (0, 2 ** bits - 1)
    out = np.where(np.isnan(r), 0, np.clip(r, lo, min(hi, 2.0 ** 63)))
    if bits == 64:
        big = r >= 2.0 ** 63
        res = np.where(big, 0, out).astype(np.int64 if _signed(dt) else np.uint64)
        top = DT[dt](hi)
        res = np.where(big, top, res).astype(DT[dt])
        if not _signed(dt):
            res = np.where(big & (r >= 2.0 ** 64), top, np.where(big, (r - 2.0 ** 63).astype(np.uint64) + np.uint64(2 ** 63), res))
        return res.astype(DT[dt])
    return out.astype(np.int64).astype(DT[dt])


@op("cvt")
def _cvt(self, ins, m, *_):
    dt, st = ins.types[0], ins.types[1]
    mods = ins.mods
    rnd = next((x for x in mods if x in IROUND), None)
    mode = next((x for x in mods if x in ("rn", "rz", "rm", "rp")), "rn")
    ftz, sat = "ftz" in mods, "sat" in mods
    if dt in ("f16x2", "bf16x2"):         # cvt.rn.f16x2.f32 d, a, b: a -> upper half, b -> lower
        fmt = dt[:-2]
        a = np.asarray(self.get(ins.args[1], st), np.float64)
        b = np.asarray(self.get(ins.args[2], st), np.float64)
        hi, lo = (_narrow(self, x, fmt, mode, ins, st) for x in (a, b))
        return self.put(ins.args[0], _pack(lo, hi), dt, m)
    v = self.get(ins.args[1], st)
    if not _isfloat(st) and not _isfloat(dt):
        if sat:
            lo, hi = (np.iinfo(DT[dt]).min, np.iinfo(DT[dt]).max)
            vv = np.asarray(v)
            if vv.dtype == np.uint64:
                vv = np.minimum(vv, np.uint64(hi)).astype(DT[dt])
            else:
                vv = np.clip(vv.astype(np.int64), lo, hi).astype(DT[dt])
            return self.put(ins.args[0], vv, dt, m)
        return self.put(ins.args[0], np.asarray(v).astype(DT[dt]), dt, m)
    if not _isfloat(st):                  # int -> float
        r = _int_to_float(np.asarray(v), st, dt, mode)
        if dt == "f32" and sat:
            r = np.clip(r, np.float32(0), np.float32(1))
        return self.put(ins.args[0], r, dt, m)
    x = _to64(v, st) if st in HALF else np.asarray(v)
    if st == "f32" and ftz:
        x = _ftz32(x)
    if not _isfloat(dt):                  # float -> int
        if rnd is None:
            raise self.err("unsupported", "float to int cvt without an integer rounding modifier")
        r = _float_to_int(x, dt, rnd, ftz)
        if st == "f64" and _signed(dt):      # the H100 turns an f64 NaN into the most negative integer
            r = np.where(np.isnan(np.asarray(x)), DT[dt](np.iinfo(DT[dt]).min), r)
        return self.put(ins.args[0], r, dt, m)
    # float -> float
    x64 = np.asarray(x, np.float64)
    if rnd is not None:                   # round to integral within the same format
        y = IROUND[rnd](x64)
        if dt in ("f32", "f64"):
            r = y.astype(DT[dt])
        else:
            r = F.from_f64_rn(y, dt)
    elif _bits(dt) > _bits(st) or dt == st or (dt == "f32" and st in HALF):
        r = x64.astype(DT[dt]) if dt in ("f32", "f64") else F.from_f64_rn(x64, dt)
        if dt == "f32" and st == "f32":
            r = F.canon_f32(r)
    else:
        r = _narrow(self, x64, dt, mode, ins, st)
    if dt == "f32":
        r = np.asarray(r, np.float32)
        if ftz:
            r = _ftz32(r)
        if sat:                           # max(+0, min(1, x)): NaN and -0 become +0
            r = np.where(np.isnan(r) | (r <= 0), np.float32(0), np.minimum(r, np.float32(1)))
    self.put(ins.args[0], r, dt, m)


def _narrow(self, x64, fmt, mode, ins, src="f32"):
    """float64 values (exact) to a narrower float format with rounding mode; returns values or bits."""
    bits = F.round_exact(x64, 0.0, fmt, mode)
    if fmt == "f32":                      # NaN payloads survive, quieted and truncated (as measured)
        return bits.view(np.float32)
    # measured on the H100: f32 -> f16 NaN is 0x7fff, f64 -> f16 keeps the payload (0x7e00 from a quiet NaN)
    r = _canon_half(bits, fmt) if fmt == "bf16" or src != "f64" else bits
    if ins.has("relu"):
        r = _relu_half(r, fmt)
    if ins.has("satfinite"):
        v = _to64(r, fmt)
        maxb = {"f16": 0x7BFF, "bf16": 0x7F7F}[fmt]
        r = np.where(np.isinf(v), np.where(v > 0, np.uint16(maxb), np.uint16(maxb | 0x8000)), r)
    return r


@op("cvta")
def _cvta(self, ins, m, *_):
    to = ins.has("to")
    space = next((x for x in ins.mods if x in ("global", "shared", "local", "const", "param")), None)
    s = ins.args[1]
    v = np.uint64(self.sym_addr(s.name, None)) if isinstance(s, P.Sym) else self.get(s, "u64")
    if space in ("shared", "local"):
        from kreg.checker.emulator.ops import LOCAL_BASE, SHARED_BASE
        base = np.uint64(SHARED_BASE if space == "shared" else LOCAL_BASE)
        v = (v - base) if to else (v + base)
    elif space == "param":
        raise self.err("unsupported", "cvta.param")
    t = ins.type or "u64"
    self.put(ins.args[0], np.asarray(v).astype(np.uint64).astype(DT[t]), t, m)
