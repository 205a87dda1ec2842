"""The prover's per-instruction semantics (checker/prover/semantics.py) against the emulator's (emu_alu.py) on
concrete values. Each instruction form is one tiny kernel: every thread loads one input tuple, runs the
instruction, stores the results; the emulator runs it for a whole batch of tuples at once, and the
symbolic executor evaluates the same parsed instruction on z3 constants. An exact result must equal the
emulator's; a result with fresh (havoc) symbols must admit it; an uninterpreted function must be one
function: equal name and arguments, equal emulator results, across every form (UF_FORMS). Inputs: edge
values of each width plus hypothesis draws (KREG_DIFF_EXAMPLES raises the count: bench sweep)."""
from __future__ import annotations

import itertools
import os
import random
import struct
from functools import cache

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kreg.checker.emulator import machine as E
from kreg.checker.ptx import parse as P
from kreg.checker.prover.state import Unsupported
from kreg.checker.prover.semantics import execute
from kreg.checker.prover.symbolic import Executor
from kreg.checker.prover.state import State, bv

EXAMPLES = int(os.environ.get("KREG_DIFF_EXAMPLES", "3"))
BATCH = 24
SLOT = 8                     # bytes per value in the input and output rows
ROW = 8 * SLOT

# ---- instruction forms: (PTX text, register types); %d* are results, the rest inputs --------------

R = {16: "b16", 32: "b32", 64: "b64"}


def _forms():
    f = []
    for w in (16, 32, 64):
        r3 = {"d": R[w], "a": R[w], "b": R[w]}
        for s in "su":
            t = f"{s}{w}"
            f += [(f"add.{t} %d, %a, %b", r3), (f"sub.{t} %d, %a, %b", r3),
                  (f"mul.lo.{t} %d, %a, %b", r3), (f"mul.hi.{t} %d, %a, %b", r3),
                  (f"div.{t} %d, %a, %b", r3), (f"rem.{t} %d, %a, %b", r3),
                  (f"min.{t} %d, %a, %b", r3), (f"max.{t} %d, %a, %b", r3),
                  (f"mad.lo.{t} %d, %a, %b, %c", {**r3, "c": R[w]}),
                  (f"shr.{t} %d, %a, %n", {"d": R[w], "a": R[w], "n": "b32"}),
                  (f"selp.{t} %d, %a, %b, %p", {**r3, "p": "pred"})]
            if w < 64:
                f += [(f"mul.wide.{t} %d, %a, %b", {"d": R[2 * w], "a": R[w], "b": R[w]}),
                      (f"mad.wide.{t} %d, %a, %b, %c", {"d": R[2 * w], "a": R[w], "b": R[w], "c": R[2 * w]})]
            for c in ("eq", "ne", "lt", "le", "gt", "ge") + (("lo", "ls", "hi", "hs") if s == "u" else ()):
                f.append((f"setp.{c}.{t} %d, %a, %b", {"d": "pred", "a": R[w], "b": R[w]}))
        if w > 16:
            f.append((f"mad.hi.s{w} %d, %a, %b, %c", {**r3, "c": R[w]}))
            f.append((f"mad.hi.u{w} %d, %a, %b, %c", {**r3, "c": R[w]}))
        for o in ("and", "or", "xor"):
            f.append((f"{o}.b{w} %d, %a, %b", r3))
        f += [(f"not.b{w} %d, %a", r3), (f"abs.s{w} %d, %a", r3), (f"neg.s{w} %d, %a", r3),
              (f"shl.b{w} %d, %a, %n", {"d": R[w], "a": R[w], "n": "b32"}),
              (f"shr.b{w} %d, %a, %n", {"d": R[w], "a": R[w], "n": "b32"}),
              (f"mov.b{w} %d, %a", r3), (f"setp.eq.b{w} %d, %a, %b", {"d": "pred", "a": R[w], "b": R[w]}),
              (f"setp.ne.b{w} %d, %a, %b", {"d": "pred", "a": R[w], "b": R[w]})]
    # integer conversions: every pair of integer types, registers as wide as the type (16 for 8-bit)
    ints = [f"{s}{w}" for s in "su" for w in (8, 16, 32, 64)]
    for dt, stp in itertools.product(ints, ints):
        rd, rs = R[max(16, int(dt[1:]))], R[max(16, int(stp[1:]))]
        f.append((f"cvt.{dt}.{stp} %d, %a", {"d": rd, "a": rs}))
    # registers wider than the type, as NVRTC emits them (cvt.s32.s8 %r1, %r1; cvt.u16.u32 %rs, %r)
    f += [("cvt.s32.s8 %d, %a", {"d": "b32", "a": "b32"}), ("cvt.u32.u8 %d, %a", {"d": "b32", "a": "b32"}),
          ("cvt.s32.s16 %d, %a", {"d": "b32", "a": "b32"}), ("cvt.s64.s8 %d, %a", {"d": "b64", "a": "b32"}),
          ("cvt.u16.u8 %d, %a", {"d": "b16", "a": "b16"}), ("cvt.s16.s8 %d, %a", {"d": "b16", "a": "b16"})]
    p3 = {"d": "pred", "a": "pred", "b": "pred"}
    f += [("and.pred %d, %a, %b", p3), ("or.pred %d, %a, %b", p3), ("xor.pred %d, %a, %b", p3),
          ("not.pred %d, %a", p3), ("mov.pred %d, %a", p3),
          ("setp.lt.s32 %d|%e, %a, %b", {"d": "pred", "e": "pred", "a": "b32", "b": "b32"}),
          ("setp.hi.and.u32 %d|%e, %a, %b, %p", {"d": "pred", "e": "pred", "a": "b32", "b": "b32", "p": "pred"}),
          ("setp.ge.or.s64 %d, %a, %b, %p", {"d": "pred", "a": "b64", "b": "b64", "p": "pred"}),
          ("setp.ne.xor.u16 %d|%e, %a, %b, %p", {"d": "pred", "e": "pred", "a": "b16", "b": "b16", "p": "pred"}),
          # vector moves (pack / unpack)
          ("mov.b64 %d, {%a, %b}", {"d": "b64", "a": "b32", "b": "b32"}),
          ("mov.b64 {%d, %e}, %a", {"d": "b32", "e": "b32", "a": "b64"}),
          ("mov.b32 %d, {%a, %b}", {"d": "b32", "a": "b16", "b": "b16"}),
          ("mov.b32 {%d, %e}, %a", {"d": "b16", "e": "b16", "a": "b32"}),
          # immediates, as NVRTC emits them
          ("add.s32 %d, %a, -1", {"d": "b32", "a": "b32"}), ("mul.wide.s32 %d, %a, -4", {"d": "b64", "a": "b32"}),
          ("mul.wide.u32 %d, %a, 12", {"d": "b64", "a": "b32"}),
          ("and.b32 %d, %a, 0xFFFF0000", {"d": "b32", "a": "b32"}),
          ("shr.s32 %d, %a, 31", {"d": "b32", "a": "b32"}), ("shl.b64 %d, %a, 2", {"d": "b64", "a": "b64"}),
          ("shr.u64 %d, %a, 63", {"d": "b64", "a": "b64"}),
          ("mad.lo.s32 %d, %a, 3, %b", {"d": "b32", "a": "b32", "b": "b32"}),
          ("div.u32 %d, %a, 7", {"d": "b32", "a": "b32"}), ("rem.s32 %d, %a, -3", {"d": "b32", "a": "b32"}),
          ("setp.lt.s32 %d, %a, 0", {"d": "pred", "a": "b32"}), ("min.u32 %d, %a, 255", {"d": "b32", "a": "b32"}),
          ("selp.b32 %d, %a, 7, %p", {"d": "b32", "a": "b32", "p": "pred"}),
          # guarded: the destination keeps its old value where the guard is off
          ("@%p add.u32 %d, %a, %b", {"d": "b32", "a": "b32", "b": "b32", "p": "pred"}),
          ("@!%p mov.b64 %d, %a", {"d": "b64", "a": "b64", "p": "pred"}),
          ("@%p setp.lt.u32 %d, %a, %b", {"d": "pred", "a": "b32", "b": "b32", "p": "pred"}),
          ("mov.f32 %d, 0f3F800000", {"d": "b32"}), ("mov.b64 %d, 0dBFF0000000000000", {"d": "b64"}),
          ("mov.f32 %d, %a", {"d": "b32", "a": "b32"}), ("mov.u16 %d, -2", {"d": "b16"}),
          ("add.cc.u32 %d, %a, %b", {"d": "b32", "a": "b32", "b": "b32"}),
          # saturating integer arithmetic
          ("add.sat.s32 %d, %a, %b", {"d": "b32", "a": "b32", "b": "b32"}),
          ("sub.sat.s32 %d, %a, %b", {"d": "b32", "a": "b32", "b": "b32"}),
          ("mad.hi.sat.s32 %d, %a, %b, %c", {"d": "b32", "a": "b32", "b": "b32", "c": "b32"}),
          ("cvt.sat.s8.s32 %d, %a", {"d": "b32", "a": "b32"}), ("cvt.sat.u16.s32 %d, %a", {"d": "b16", "a": "b32"}),
          # bit fields with immediate position and length (exact), as NVRTC emits them for tile indices
          ("bfi.b32 %d, %a, %b, 6, 26", {"d": "b32", "a": "b32", "b": "b32"}),
          ("bfi.b32 %d, %a, %b, 30, 8", {"d": "b32", "a": "b32", "b": "b32"}),
          ("bfi.b32 %d, %a, %b, 40, 4", {"d": "b32", "a": "b32", "b": "b32"}),
          ("bfi.b64 %d, %a, %b, 3, 0", {"d": "b64", "a": "b64", "b": "b64"}),
          ("bfe.u32 %d, %a, 3, 5", {"d": "b32", "a": "b32"}), ("bfe.s32 %d, %a, 3, 5", {"d": "b32", "a": "b32"}),
          ("bfe.s64 %d, %a, 60, 4", {"d": "b64", "a": "b64"}), ("bfe.u64 %d, %a, 0, 64", {"d": "b64", "a": "b64"}),
          ("bfe.u32 %d, %a, 30, 8", {"d": "b32", "a": "b32"}),       # past the top: left to the function
          # population count (exact: ballot ranks)
          ("popc.b32 %d, %a", {"d": "b32", "a": "b32"}), ("popc.b64 %d, %a", {"d": "b32", "a": "b64"})]
    return f


FORMS = _forms()
_f32 = {"d": "b32", "a": "b32", "b": "b32"}
# forms the prover models as uninterpreted functions: checked for being functions (congruence)
UF_FORMS = [
    ("bfe.u32 %d, %a, %b, %c", {**_f32, "c": "b32"}), ("bfe.s32 %d, %a, %b, %c", {**_f32, "c": "b32"}),
    ("bfi.b32 %d, %a, %b, %c, %e", {**_f32, "c": "b32", "e": "b32"}), ("prmt.b32 %d, %a, %b, %c", {**_f32, "c": "b32"}),
    ("clz.b32 %d, %a", _f32), ("brev.b32 %d, %a", _f32),
    ("lop3.b32 %d, %a, %b, %c, 0x96", {**_f32, "c": "b32"}), ("mul24.lo.u32 %d, %a, %b", _f32),
    ("cnot.b32 %d, %a", _f32), ("sad.u32 %d, %a, %b, %c", {**_f32, "c": "b32"}),
    ("add.f32 %d, %a, %b", _f32), ("add.ftz.f32 %d, %a, %b", _f32), ("mul.rn.f32 %d, %a, %b", _f32),
    ("add.rn.f16x2 %d, %a, %b", _f32), ("fma.rn.f32 %d, %a, %b, %c", {**_f32, "c": "b32"}),
    ("max.f32 %d, %a, %b", _f32), ("max.NaN.f32 %d, %a, %b", _f32),
    ("setp.lt.f32 %d, %a, %b", {"d": "pred", "a": "b32", "b": "b32"}),
    ("setp.lt.ftz.f32 %d, %a, %b", {"d": "pred", "a": "b32", "b": "b32"}),
    ("setp.gtu.f32 %d, %a, %b", {"d": "pred", "a": "b32", "b": "b32"}),
    ("cvt.rzi.s32.f32 %d, %a", _f32), ("cvt.rn.f32.s32 %d, %a", _f32), ("cvt.rn.f32.u32 %d, %a", _f32),
    ("cvt.rzi.ftz.s32.f32 %d, %a", _f32), ("neg.f32 %d, %a", _f32), ("abs.f32 %d, %a", _f32),
    ("abs.ftz.f32 %d, %a", _f32), ("bfind.u32 %d, %a", _f32), ("bfind.s32 %d, %a", _f32),
    ("bfind.shiftamt.u32 %d, %a", _f32),
]


def _parts(text, regs):
    """(input registers, result registers) of a form: results are %d and %e."""
    outs = [r for r in regs if r in ("d", "e")]
    ins = [r for r in regs if r not in outs]
    if text.startswith("@"):              # a guarded instruction reads its destination's old value
        ins = ins + ["d"]
    return ins, outs


@cache
def kernel(text, regs_items):
    """(PTX text, parsed module, index of the instruction under test, inputs, results) of a form."""
    regs = dict(regs_items)
    ins, outs = _parts(text, regs)
    body = [f".reg .{t} %{n};" for n, t in regs.items()]
    body += [".reg .b32 %tx, %t32;", ".reg .b64 %pin, %pout, %off, %ain, %aout;",
             "ld.param.u64 %pin, [k_in];", "ld.param.u64 %pout, [k_out];", "mov.u32 %tx, %tid.x;",
             f"mul.wide.u32 %off, %tx, {ROW};", "add.s64 %ain, %pin, %off;", "add.s64 %aout, %pout, %off;"]
    for i, n in enumerate(ins):
        if regs[n] == "pred":            # predicates travel as 0 / 1 words
            body += [f"ld.global.u32 %t32, [%ain+{SLOT * i}];", f"setp.ne.u32 %{n}, %t32, 0;"]
        else:
            body.append(f"ld.global.{regs[n]} %{n}, [%ain+{SLOT * i}];")
    body.append(text + ";")
    for j, n in enumerate(outs):
        if regs[n] == "pred":
            body += [f"selp.u32 %t32, 1, 0, %{n};", f"st.global.u32 [%aout+{SLOT * j}], %t32;"]
        else:
            body.append(f"st.global.{regs[n]} [%aout+{SLOT * j}], %{n};")
    body.append("ret;")
    src = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 k_in, .param .u64 k_out)\n{\n"
           + "\n".join(body) + "\n}\n")
    module = P.parse(src)
    k = module.kernel("k")
    idx = next(i.index for i in k.instrs if i.text.strip().rstrip(";") == text.rstrip(";"))
    return src, module, idx, tuple(ins), tuple(outs)


def _width(t):
    return 1 if t == "pred" else P.TYPES[t]


def emulate(text, regs, rows):
    """The emulator's outputs (unsigned ints) for each input row."""
    src, module, _, ins, outs = kernel(text, tuple(regs.items()))
    n = len(rows)
    inp = np.zeros((n, ROW // 8), np.uint64)
    for i, row in enumerate(rows):
        inp[i, :len(row)] = [v % (1 << 64) for v in row]
    mem = E.Memory()
    pin, pout = mem.alloc(inp.nbytes, "in"), mem.alloc(inp.nbytes, "out")
    mem.write(pin, inp)
    E.launch(module, "k", 1, n, 0, [np.uint64(pin), np.uint64(pout)], mem)
    out = np.frombuffer(mem.read(pout, inp.nbytes), np.uint64).reshape(n, -1)
    return [[int(out[i, j]) & ((1 << _width(regs[o])) - 1) for j, o in enumerate(outs)] for i in range(n)]


class _Env:
    """What the executor asks of a launch environment, for one instruction on concrete values: no
    launch constraints, no special registers."""
    ufs: dict = {}
    constraints: list = []

    def specials(self, thread):
        return {}

    def thread_constraints(self, thread):
        return []

    def text_of(self, thread):
        return None          # no name for the constraints' text: a quick check keys them by their terms


def symbolic(text, regs, row):
    """The symbolic executor's outputs (z3 terms, simplified) for one input row."""
    _, module, idx, ins, outs = kernel(text, tuple(regs.items()))
    k = module.kernel("k")
    ex = Executor(k, module, _Env(), "A")
    st = State({}, {}, z3.BoolVal(True), bv(0, 64))
    for n, v in zip(ins, row):
        st.regs["%" + n] = z3.BoolVal(bool(v)) if regs[n] == "pred" else bv(v, P.TYPES[regs[n]])
    instr = k.instrs[idx]
    guard = ex.pred(st, instr) if instr.pred is not None else None
    execute(ex, st, instr, guard)
    return [z3.simplify(st.regs["%" + o]) for o in outs]


def _edges(t):
    if t == "pred":
        return [0, 1]
    w = P.TYPES[t]
    full, half = 1 << w, 1 << (w - 1)
    return sorted({0, 1, 2, 3, 7, full - 1, full - 2, half, half - 1, half + 1, 0x7F, 0x80, 0xFF, 0x8000,
                   0xFFFF, w - 1, w, w + 1, 31, 32, 33, 63, 64} - set(range(full, 1 << 17)))


def _random(t, rnd):
    if t == "pred":
        return rnd.randint(0, 1)
    w = P.TYPES[t]
    return rnd.choice(_edges(t)) if rnd.random() < 0.3 else rnd.getrandbits(w)


def edge_rows(text, regs, n=96, seed=0):
    """Edge-value tuples: every combination when few, else a fixed random sample."""
    ins, _ = _parts(text, regs)
    pools = [_edges(regs[x]) for x in ins]
    combos = list(itertools.product(*pools))
    if len(combos) > n:
        combos = random.Random(f"{text}/{seed}").sample(combos, n)
    return [list(c) for c in combos]


def _matches(sym, emu):
    """True if the emulator's value is one the symbolic result allows."""
    if z3.is_bool(sym):
        if z3.is_true(sym) or z3.is_false(sym):
            return z3.is_true(sym) == bool(emu)
        f = sym == z3.BoolVal(bool(emu))
    else:
        if z3.is_bv_value(sym):
            return sym.as_long() == emu
        f = sym == bv(emu, sym.size())
    s = z3.Solver()
    s.add(f)
    return s.check() == z3.sat


def check(text, regs, rows):
    bad = []
    for row, got in zip(rows, emulate(text, regs, rows)):
        try:
            want = symbolic(text, regs, row)
        except Unsupported:
            return []                    # unmodelled: the prover gives `unknown`, which is sound
        for s, e in zip(want, got):
            if not _matches(s, e):
                bad.append(f"{text} on {[hex(v) for v in row]}: emulator {e:#x}, prover {s}")
    return bad


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f[0])
def test_edge_values_agree(form):
    text, regs = form
    bad = check(text, regs, edge_rows(text, regs))
    assert not bad, "\n".join(bad[:5])


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f[0])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_values_agree(form, seed):
    text, regs = form
    rnd = random.Random(seed)
    ins, _ = _parts(text, regs)
    rows = [[_random(regs[x], rnd) for x in ins] for _ in range(BATCH)]
    bad = check(text, regs, rows)
    assert not bad, "\n".join(bad[:5])


def _uf_key(term):
    """(function name, concrete arguments) of an uninterpreted application, or None."""
    neg = False
    if z3.is_not(term):
        term, neg = term.arg(0), True
    if not (z3.is_app(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED and term.num_args()):
        return None
    if not all(z3.is_bv_value(a) for a in term.children()):
        return None
    return term.decl().name(), tuple(a.as_long() for a in term.children()), neg


def _float_edges():
    vals = [0.0, -0.0, 1.0, -1.0, 1.5, 1e-40, -1e-40, 1e-45, 3e38, float("inf"), float("-inf"), float("nan"),
            2.5, -2.5, 0.5, 16777217.0, -2147483648.0, 4294967296.0]
    return [struct.unpack("<I", struct.pack("<f", v))[0] for v in vals] + [0x00010001, 0x3C003C00, 0x80018001]


def test_uninterpreted_functions_are_functions():
    """Every (function, arguments) the prover builds names one emulator value, across all forms: an
    instruction whose modifiers change its result must not share a function with one that lacks them."""
    seen, bad = {}, []
    vals = _float_edges()
    for text, regs in UF_FORMS:
        ins, outs = _parts(text, regs)
        rows = [list(r) for r in itertools.product(vals, repeat=len(ins))]
        rows = random.Random(text).sample(rows, min(len(rows), 200))
        for row, got in zip(rows, emulate(text, regs, rows)):
            for s, e in zip(symbolic(text, regs, row), got):
                key = _uf_key(s)
                if key is None:
                    bad += [] if _matches(s, e) else [f"{text} on {row}: emulator {e:#x}, prover {s}"]
                    continue
                name, args, neg = key
                e = int(not e) if neg else e
                old = seen.setdefault((name, args), (e, text))
                if old[0] != e:
                    bad.append(f"{name}{args}: {old[1]} gives {old[0]:#x}, {text} gives {e:#x}")
    assert not bad, f"{len(bad)} conflicts:\n" + "\n".join(bad[:8])


# ---- the disagreements this harness found, as minimal cases --------------------------------------

def test_add_sat_clamps_in_the_prover():
    """semantics.py modelled add.sat.s32 as a wrapping add (MAXINT + 1 = MININT, not MAXINT)."""
    regs = {"d": "b32", "a": "b32", "b": "b32"}
    assert symbolic("add.sat.s32 %d, %a, %b", regs, [0x7FFFFFFF, 1])[0].as_long() == 0x7FFFFFFF
    assert symbolic("sub.sat.s32 %d, %a, %b", regs, [0x80000000, 1])[0].as_long() == 0x80000000


def test_setp_ftz_is_not_the_same_function_as_setp():
    """semantics.py named the UF of setp.lt.ftz.f32 like that of setp.lt.f32: a denormal compares
    differently, so the prover could assume two different predicates equal."""
    regs = {"d": "pred", "a": "b32", "b": "b32"}
    f1 = symbolic("setp.lt.f32 %d, %a, %b", regs, [0, 1])[0]
    f2 = symbolic("setp.lt.ftz.f32 %d, %a, %b", regs, [0, 1])[0]
    assert f1.decl().name() != f2.decl().name()
    assert emulate("setp.lt.f32 %d, %a, %b", regs, [[0, 1]]) != emulate("setp.lt.ftz.f32 %d, %a, %b", regs, [[0, 1]])


def test_emulator_div_s64_of_minint():
    """emu_alu divided 64-bit MININT through np.abs, which overflows: MININT / 32 came out positive."""
    regs = {"d": "b64", "a": "b64", "b": "b64"}
    got = emulate("div.s64 %d, %a, %b", regs, [[1 << 63, 32], [7, 1 << 63], [1 << 63, (1 << 64) - 1]])
    assert got == [[(1 << 64) - (1 << 58)], [0], [1 << 63]]
    assert emulate("rem.s64 %d, %a, %b", regs, [[0x41, 1 << 63]]) == [[0x41]]


# ---- tensor-core and asynchronous-copy instructions ---------------------------------------------------------

MMA_FORMS = [     # operands share registers: the harness has 8 input slots per thread
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%d, %e, %f, %g}, {%a, %b, %c, %a}, {%b, %c}, "
     "{%c, %h, %a, %b}", {r: "b32" for r in "defgabch"}),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d, %e, %f, %g}, {%a, %b, %c, %a}, {%b, %c}, "
     "{%c, %h, %a, %b}", {r: "b32" for r in "defgabch"}),
]


@pytest.mark.parametrize("form", MMA_FORMS, ids=lambda f: f[0][:60])
def test_mma_results_admit_the_emulator(form):
    """A warp collective (each lane's result depends on every lane's fragments): the prover's fresh
    values must admit what the emulator computes, for whole warps of edge and random values."""
    text, regs = form
    ins, _ = _parts(text, regs)
    rnd = random.Random(text)
    rows = [[rnd.choice(_float_edges()) if rnd.random() < 0.3 else rnd.getrandbits(32) for _ in ins] for _ in range(64)]
    assert not check(text, regs, rows)


def _executor(src):
    module = P.parse(src)
    k = module.kernel("k")

    class Env(_Env):
        buffers: dict = {}

        def specials(self, thread):
            return {"%laneid": z3.BitVec("lane", 32)}

        def buffer_for_symbol(self, name, kernel):
            return None
    ex = Executor(k, module, Env(), "A")
    return k, ex


def test_ldmatrix_reads_one_row_per_supplying_lane_and_cp_async_is_pending():
    """ldmatrix.x2: this thread reads 16 bytes at its own address iff lane < 16; cp.async: a read of the
    source at issue (under src-size != 0) and a shared write pending until cp.async.wait_all, whose
    completion fixes its end to the wait's epoch and async count."""
    src = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
           ".reg .b32 %a, %d, %e, %n;\n.reg .b64 %g;\n"
           "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%d, %e}, [%a];\n"
           "cp.async.cg.shared.global [%a], [%g], 16, %n;\n"
           "cp.async.commit_group;\n"
           "cp.async.wait_all;\nret;\n}\n")
    k, ex = _executor(src)
    st = State({}, {}, z3.BoolVal(True), bv(0, 64), (), bv(0, 64), bv(0, 64))
    for ins in k.instrs[:-1]:
        st = ex.step(st, ins)
    rd, glob, wr = ex.trace.accesses
    lane = z3.BitVec("lane", 32)
    s = z3.Solver()
    assert (rd.kind, rd.width) == ("read", 16)
    assert s.check(rd.pc, z3.UGE(lane, 16)) == z3.unsat and s.check(rd.pc, lane == 15) == z3.sat
    assert (glob.kind, glob.width, wr.kind, wr.end is not None) == ("read", 16, "write", True)
    assert s.check(glob.pc, st.regs["%n"] == 0) == z3.unsat          # nothing read at src-size 0
    assert st.pending == ()                                          # the wait completed it
    s.add(*ex.trace.defs)
    assert s.check(wr.end != st.epoch) == z3.unsat and s.check(wr.aseq_end != st.aseq) == z3.unsat
    assert s.check(z3.ULT(wr.aseq, wr.aseq_end)) == z3.sat and s.check(wr.aseq == wr.aseq_end) == z3.unsat


def test_cp_async_without_a_wait_stays_pending():
    src = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
           ".reg .b32 %a;\n.reg .b64 %g;\n"
           "cp.async.ca.shared.global [%a], [%g], 8;\ncp.async.commit_group;\ncp.async.wait_group 1;\nret;\n}\n")
    k, ex = _executor(src)
    st = State({}, {}, z3.BoolVal(True), bv(0, 64), (), bv(0, 64), bv(0, 64))
    for ins in k.instrs[:-1]:
        st = ex.step(st, ins)
    (a, n, _), = st.pending             # one group committed since, wait_group 1 leaves it pending
    assert n == 1 and ex.trace.defs == []
