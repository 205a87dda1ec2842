"""The symbolic launch environment for one launch of a variant: shape variables (dims) as wide
bitvectors constrained by the op's ranges and requirements, launch geometry from the variant's
expressions, one distinct buffer per pointer param / scratch / shared or module variable (symbolic
base address and size in bytes), kernel parameter values, and each thread's special registers."""
from __future__ import annotations

import itertools

import z3

from kreg.registry.expr import Expr
from kreg.registry.schema import DTYPES, Launch, Op, Variant

from kreg.checker.ptx import parse as P
from kreg.checker.prover.state import Unsupported
from kreg.checker.prover.state import Buffer, bv, fit

AXES = "xyz"
GRID_MAX = ((1 << 31) - 1, 65535, 65535)
BLOCK_MAX = (1024, 1024, 64)


def bound(t: tuple, ranges: dict) -> int:
    """An upper bound of |expr| over the dims' ranges (for choosing a bitvector width)."""
    k = t[0]
    if k == "int":
        return abs(t[1])
    if k == "name":
        return max(abs(x) for x in ranges[t[1]])
    if k == "neg":
        return bound(t[1], ranges)
    if k in ("+", "-"):
        return bound(t[1], ranges) + bound(t[2], ranges)
    if k == "*":
        return bound(t[1], ranges) * bound(t[2], ranges)
    if k in ("//", "%"):
        return bound(t[1], ranges) + bound(t[2], ranges)
    if k == "call":
        return sum(bound(x, ranges) for x in t[2:]) + 1
    if k in ("cmp",):
        return max(bound(t[2], ranges), bound(t[3], ranges))
    if k in ("and", "or"):
        return max(bound(x, ranges) for x in t[1:])
    return 1 << 200


_SERIAL = itertools.count()


class LaunchEnv:
    def __init__(self, variant: Variant, op: Op, module: P.Module, launch: Launch, case: dict | None = None):
        self.variant, self.op, self.module, self.launch = variant, op, module, launch
        self.serial = next(_SERIAL)       # this env among every one of the process (ids of freed ones recur)
        exprs = [e for p in op.params.values() for e in p.shape + (p.values or ())]
        exprs += [e for s in variant.scratch.values() for e in s.shape]
        exprs += list(op.requires) + list(launch.grid) + list(launch.block) + [launch.shared]
        exprs += [a.expr for a in launch.args if a.expr is not None]
        b = max([bound(e.tree, op.dims) for e in exprs] + [1])
        self.W = 64 if b < (1 << 60) else 128 if b < (1 << 120) else 256
        self.dims = {d: z3.BitVec(f"dim_{d}", self.W) for d in op.dims}
        self.constraints: list = []
        self.ufs: dict = {}
        W = self.W
        for d, (lo, hi) in op.dims.items():
            self.constraints += [self.dims[d] >= lo, self.dims[d] <= hi]
        for r in op.requires:
            self.constraints.append(self.cond(r.tree))
        self.grid, self.block = [], []
        for i in range(3):
            g = self.expr(launch.grid[i]) if i < len(launch.grid) else bv(1, W)
            bl = self.expr(launch.block[i]) if i < len(launch.block) else bv(1, W)
            self.constraints += [g >= 1, g <= GRID_MAX[i], bl >= 1, bl <= BLOCK_MAX[i]]
            self.grid.append(z3.Extract(31, 0, g))
            self.block.append(z3.Extract(31, 0, bl))
        self.constraints.append(z3.ZeroExt(W - 32, self.block[0]) * z3.ZeroExt(W - 32, self.block[1])
                                * z3.ZeroExt(W - 32, self.block[2]) <= 1024)
        self.shared = self.expr(launch.shared)
        self.constraints += [self.shared >= 0, self.shared <= 232448]
        self.windows = self._windows(module.kernel(launch.entry)) if module is not None else {}
        self.buffers: dict[str, Buffer] = {}
        self.scalars: dict[str, z3.ExprRef] = {}
        types = variant.types
        for a in launch.args:
            if a.param is None:
                continue
            if a.param in variant.scratch:
                s = variant.scratch[a.param]
                self._buffer(a.param, "scratch", "scratch", s.shape, DTYPES[s.dtype][0], s.dtype)
            elif op.params[a.param].role != "scalar" or op.params[a.param].shape:
                p = op.params[a.param]
                dt = op.dtype_of(a.param, types)
                self._buffer(a.param, "param", p.role if p.role != "scalar" else "in", p.shape, DTYPES[dt][0], dt,
                             p.values)
        if case is not None:
            self.constraints += [self.dims[d] == v for d, v in case.items()]

    # ---- expressions ----------------------------------------------------------------------------
    def expr(self, e: Expr):
        return self._z(e.tree)

    def cond(self, t):
        k = t[0]
        if k == "and":
            return z3.And(*[self.cond(x) for x in t[1:]])
        if k == "or":
            return z3.Or(*[self.cond(x) for x in t[1:]])
        a, b = self._z(t[2]), self._z(t[3])
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[t[1]]

    def _z(self, t):
        return self._zs(t)[0]

    def _zs(self, t):
        """(bitvector, known to be >= 0): unsigned division where both sides are non-negative (dims
        are), which z3 turns into shifts for powers of two instead of divider circuits."""
        k, W = t[0], self.W
        if k == "int":
            return bv(t[1], W), t[1] >= 0
        if k == "name":
            return self.dims[t[1]], self.op.dims[t[1]][0] >= 0
        if k == "neg":
            return -self._z(t[1]), False
        if k in ("+", "-", "*"):
            (a, na), (b, nb) = self._zs(t[1]), self._zs(t[2])
            if k == "+":
                return a + b, na and nb
            return (a - b, False) if k == "-" else (a * b, na and nb)
        if k in ("//", "%"):
            (a, na), (b, nb) = self._zs(t[1]), self._zs(t[2])
            if na and nb:
                return (z3.UDiv(a, b) if k == "//" else z3.URem(a, b)), True
            q = _floordiv(a, b)
            return (q if k == "//" else a - b * q), False
        if k == "call":
            args = [self._zs(x) for x in t[2:]]
            if t[1] == "cdiv":
                (a, na), (b, nb) = args
                if na and nb:
                    return z3.UDiv(a + b - 1, b), True
                return -_floordiv(-a, b), False
            out, nn = args[0]
            for x, nx in args[1:]:
                out = z3.If(x < out, x, out) if t[1] == "min" else z3.If(x > out, x, out)
                nn = (nn and nx) if t[1] == "min" else (nn or nx)
            return out, nn
        raise Unsupported(f"expression node {k}")

    def _size(self, shape, esize):
        n = bv(esize, self.W)
        for e in shape:
            n = n * self.expr(e)
        return n

    def _buffer(self, name, kind, role, shape, esize, dtype, values=None):
        if name in self.buffers:
            return
        base = z3.BitVec(f"base_{name}", 64)
        size = self._size(shape, esize)
        W = self.W
        self.constraints += [z3.Extract(7, 0, base) == 0, z3.UGE(base, 1 << 16), z3.ULT(base, 1 << 48),
                             size >= 0, size < (1 << 47),
                             z3.ULE(z3.ZeroExt(W + 1 - 64, base) + z3.ZeroExt(1, size), 1 << 48)]
        vals = None
        if values is not None:
            vals = (self.expr(values[0]), self.expr(values[1]))
        self.buffers[name] = Buffer(name, kind, role, size, base, esize * 8, vals, dtype[0] != "u")

    def _windows(self, kernel: P.Kernel) -> dict:
        """The generic address of shared (local) memory's address 0, where the kernel converts addresses of that
        space (cvta): a symbol, 2**32-aligned above every global buffer (its window, 2**32 bytes, holds the
        space's every address and no global buffer). A kernel with no such cvta forms no generic address in a
        window: its generic accesses are global ones (symbolic.Executor.record)."""
        spaces = sorted({ins.space for ins in kernel.instrs if ins.op == "cvta"} & {"shared", "local"})
        out = {sp: z3.BitVec(f"window_{sp}", 64) for sp in spaces}
        for w in out.values():
            self.constraints += [z3.Extract(31, 0, w) == 0, z3.UGE(w, 1 << 48)]
        if len(out) == 2:
            self.constraints.append(out["shared"] != out["local"])
        return out

    def buffer_for_symbol(self, name: str, kernel: P.Kernel) -> Buffer | None:
        if name in self.buffers:
            return self.buffers[name]
        var = kernel.locals.get(name) or self.module.globals.get(name)
        if var is None:
            return None
        W = self.W
        if var.space == "shared":
            # every extern (dynamic) shared array starts at the start of the dynamic shared memory
            b32 = z3.BitVec("sbase_%dynamic" if var.count is None else f"sbase_{name}", 32)
            size = self.shared if var.count is None else bv(var.size, W)
            al = max(var.align, 1)
            self.constraints += [z3.URem(b32, al) == 0, z3.ULT(b32, 1 << 24), size >= 0, size < (1 << 24),
                                 z3.ULE(z3.ZeroExt(W - 32, b32) + size, 1 << 24)]
            buf = Buffer(name, "shared", "shared", size, z3.ZeroExt(32, b32), dynamic=var.count is None)
        else:
            base = z3.BitVec(f"base_{name}", 64)
            size = bv(var.size, W)
            self.constraints += [z3.UGE(base, 1 << 16), z3.ULT(base, 1 << 47), z3.URem(base, max(var.align, 1)) == 0]
            kind = {"global": "global-var", "const": "const", "local": "local"}[var.space]
            if kind == "local" and "local" in self.windows:         # inside its window
                self.constraints.append(z3.ULE(z3.ZeroExt(W + 1 - 64, base) + z3.ZeroExt(1, size), 1 << 32))
            buf = Buffer(name, kind, kind, size, base)
        self.buffers[name] = buf
        return buf

    def param_value(self, kernel: P.Kernel, name: str, offset: int, w: int):
        idx = next((i for i, p in enumerate(kernel.params) if p.name == name), None)
        if idx is None or idx >= len(self.launch.args):
            raise Unsupported(f"load of unknown parameter {name}")
        p = kernel.params[idx]
        if offset != 0 or p.size > 8:
            raise Unsupported(f"aggregate parameter {name}")
        a = self.launch.args[idx]
        pw = p.size * 8
        if a.param is not None and a.param in self.buffers:
            return fit(self.buffers[a.param].base, w), a.param
        if a.param is not None:
            sp = self.op.params[a.param]
            if a.param not in self.scalars:
                s = z3.BitVec(f"scalar_{a.param}", pw)
                self.scalars[a.param] = s
                if sp.values is not None:
                    dt = self.op.dtype_of(a.param, self.variant.types)
                    sv = fit(s, self.W, dt[0] != "u")
                    self.constraints += [self.expr(sp.values[0]) <= sv, sv <= self.expr(sp.values[1])]
            return fit(self.scalars[a.param], w), None
        v = self.expr(a.expr)
        return fit(fit(v, pw), w, a.ctype in ("i32", "i64")), None

    # ---- threads --------------------------------------------------------------------------------
    def thread(self, t: str):
        tid = [z3.BitVec(f"tid.{c}@{t}", 32) for c in AXES]
        cta = [z3.BitVec(f"ctaid.{c}@{t}", 32) for c in AXES]
        return tid, cta

    def thread_constraints(self, t: str):
        """Thread t's indices within the launch (the same text every time: see text_of)."""
        tid, cta = self.thread(t)
        return [z3.ULT(tid[i], self.block[i]) for i in range(3)] + [z3.ULT(cta[i], self.grid[i]) for i in range(3)]

    def text_of(self, t: str) -> tuple:
        """A name for the text of [*constraints, *thread_constraints(t)] as they are now: the constraints are only
        ever appended to, and the thread's follow from t and the launch's block and grid."""
        return "env", self.serial, t, len(self.constraints)

    def specials(self, t: str) -> dict:
        tid, cta = self.thread(t)
        sp = {}
        for i, c in enumerate(AXES):
            sp[f"%tid.{c}"], sp[f"%ctaid.{c}"] = tid[i], cta[i]
            sp[f"%ntid.{c}"], sp[f"%nctaid.{c}"] = self.block[i], self.grid[i]
        lin = tid[0] + tid[1] * self.block[0] + tid[2] * self.block[0] * self.block[1]
        sp["%laneid"] = lin & 31
        sp["%warpsize"] = bv(32, 32)
        sp["%dynamic_smem_size"] = z3.Extract(31, 0, self.shared)
        return sp


def _floordiv(a, b):
    q = a / b
    return z3.If(z3.And(z3.SRem(a, b) != 0, (a < 0) != (b < 0)), q - 1, q)
