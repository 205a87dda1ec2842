"""The PTX emulator's register file: typed reads and masked writes of registers, immediates, special
registers and symbol addresses, plus the error type every emulator failure raises."""
from __future__ import annotations

import numpy as np

from kreg.checker.emulator import fpround as F
from kreg.checker.ptx import parse as P

UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
INT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
STORE = UINT
DT = {"pred": np.bool_, "f32": np.float32, "f64": np.float64, "f16": np.uint16, "bf16": np.uint16,
      "f16x2": np.uint32, "bf16x2": np.uint32}
for _b in (8, 16, 32, 64):
    DT[f"u{_b}"] = DT[f"b{_b}"] = UINT[_b]
    DT[f"s{_b}"] = INT[_b]
BITS = {t: b for t, b in P.TYPES.items()}
ROUND = ("rn", "rz", "rm", "rp")
IROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}
HALF = ("f16", "bf16")
CLUSTER_SHIFT = 24               # shared::cluster addresses: (1 + rank) << 24 | offset (machine._cluster_locate)
ALU = {}                         # opcode -> handler; alu, memory, sync, tensor and wgmma register theirs with @op


def op(*names):
    def deco(fn):
        for n in names:
            ALU[n] = fn
        return fn
    return deco


def _signed(t):
    return t[0] == "s"


def _isfloat(t):
    return t[0] == "f" or t.startswith("bf")


def _mode(ins, default="rn"):
    for m in ins.mods:
        if m in ROUND:
            return m
    return default


def _u(x, bits):
    return np.asarray(x).astype(UINT[bits]) if np.asarray(x).dtype.itemsize * 8 != bits else \
        np.asarray(x).view(UINT[bits])


SHARED_BASE = 0x0000_1000_0000_0000   # generic addresses of the executing block's shared memory
LOCAL_BASE = 0x0000_2000_0000_0000    # generic addresses of the thread's local memory


class EmulatorError(RuntimeError):
    """kind: out-of-bounds | misaligned | step-limit | unsupported | barrier-divergence | trap | launch-limits."""

    def __init__(self, kind: str, message: str, *, block=None, thread=None, instr=None, address=None,
                 buffer=None):
        self.kind, self.block, self.thread, self.instr = kind, block, thread, instr
        self.address, self.buffer = address, buffer
        where = []
        if block is not None:
            where.append(f"block {block} thread {thread}")
        if instr is not None:
            where.append(f"line {instr.line}: {instr.text.strip()}")
        if address is not None:
            where.append(f"address {address:#x}" + (f" (nearest buffer {buffer!r})" if buffer else ""))
        super().__init__(f"{kind}: {message}" + (" [" + "; ".join(where) + "]" if where else ""))


def _stored(val: np.ndarray, t: str, odt) -> np.ndarray:
    """val, a value of PTX type t, as a register of dtype odt holds it (narrower: zero- or sign-extended; wider:
    its low bits)."""
    if t == "pred" or odt == np.bool_:
        return val.astype(bool)
    dt = DT[t]
    if val.dtype != dt:
        val = val.astype(dt)
    sb, tb = odt.itemsize * 8, val.dtype.itemsize * 8
    if sb == tb:
        return val.view(odt)
    if tb > sb:
        return val.view(UINT[tb]).astype(odt)
    if _signed(t):
        return val.view(INT[tb]).astype(INT[sb]).view(odt)
    return val.view(UINT[tb]).astype(odt)


def _ftz32(x):
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < np.float32(1.1754944e-38), np.copysign(np.float32(0), x), x)


class EmuOpsMixin:
    # ---- registers and operands ---------------------------------------------------------------------
    def get(self, a, t):
        if isinstance(a, P.Reg):
            arr = self.regs[a.name]
            if t == "pred" or arr.dtype == np.bool_:
                return arr
            sb, tb = arr.dtype.itemsize * 8, max(BITS[t], 8)
            dt = DT[t]
            if sb == tb:
                return arr if arr.dtype == dt else arr.view(dt)
            if tb < sb:
                return arr.astype(UINT[tb]).view(dt)
            if _signed(t):
                return arr.view(INT[sb]).astype(dt)
            return arr.astype(UINT[tb]).view(dt)
        if isinstance(a, P.Imm):
            return self.imm(a, t)
        if isinstance(a, P.Special):
            return self.special(a).astype(DT[t]) if not np.isscalar(self.special(a)) else DT[t](self.special(a))
        if isinstance(a, P.Sym):
            return np.uint64(self.sym_addr(a.name, None)).astype(DT[t])
        if isinstance(a, P.NotPred):
            return ~self.regs[a.reg.name]
        raise self.err("unsupported", f"operand {a} not supported here")

    def imm(self, a: P.Imm, t):
        key = (a, t)
        v = self._cache.get(key)
        if v is None:
            if t == "pred":
                v = np.bool_(bool(a.value))
            elif a.raw is not None and t in DT and BITS[t] == a.raw[1]:     # the literal's own bits
                v = (np.uint32 if a.raw[1] == 32 else np.uint64)(a.raw[0]).view(DT[t])
            elif a.is_float:
                if t in ("f32", "f64"):
                    v = DT[t](a.value)
                elif t in HALF:
                    v = F.from_f64_rn(np.float64(a.value), t)[()]
                else:
                    tb = BITS[t]
                    v = (np.float32(a.value).view(np.uint32) if tb == 32 else np.float64(a.value).view(np.uint64))
                    v = v.view(DT[t]) if tb in (32, 64) else DT[t](int(v))
            elif t in ("f32", "f64"):
                v = DT[t](a.value)
            else:
                tb = max(BITS[t], 8)
                v = np.array(int(a.value) & ((1 << tb) - 1), UINT[tb]).view(DT[t])[()]
            self._cache[key] = v
        return v

    def special(self, a: P.Special):
        key = ("special", a.name, a.dim)
        v = self._cache.get(key)
        if v is not None:
            return v
        d = "xyz".index(a.dim) if a.dim else 0
        n = a.name
        if n == "%tid":
            v = self.tidx[d].astype(np.uint32)
        elif n == "%ntid":
            v = np.uint32(self.block[d])
        elif n == "%ctaid":
            v = self.cta[d].astype(np.uint32)
        elif n == "%nctaid":
            v = np.uint32(self.grid[d])
        elif n == "%laneid":
            v = self.lane
        elif n == "%warpid":
            v = (self.warp % self.wpb).astype(np.uint32)
        elif n == "%nwarpid":
            v = np.uint32(self.wpb)
        elif n == "%warpsize":
            v = np.uint32(32)
        elif n == "%smid":
            v = np.uint32(0)
        elif n == "%gridid":
            v = np.uint64(0)
        elif n == "%nsmid":
            v = np.uint32(1)
        elif n in ("%dynamic_smem_size",):
            v = np.uint32(self.dyn)
        elif n == "%total_smem_size":
            v = np.uint32(self.ssize)
        elif n.startswith("%lanemask_"):
            ln = self.lane.astype(np.uint64)
            one = np.uint64(1)
            v = {"eq": one << ln, "lt": (one << ln) - one, "le": (one << (ln + one)) - one,
                 "gt": ~((one << (ln + one)) - one), "ge": ~((one << ln) - one)}[n[10:]].astype(np.uint32)
        elif n in ("%clock", "%clock64", "%globaltimer"):
            return np.uint64(self.steps)
        elif n in ("%globaltimer_lo", "%globaltimer_hi"):
            return np.uint32((self.steps >> (32 if n.endswith("hi") else 0)) & 0xFFFFFFFF)
        elif n == "%cluster_ctarank":
            v = self.crank.astype(np.uint32)
        elif n == "%cluster_nctarank":
            v = np.uint32(self.csize)
        elif n == "%cluster_ctaid":
            v = self.cpos[d].astype(np.uint32)
        elif n == "%cluster_nctaid":
            v = np.uint32(self.cluster[d])
        elif n == "%clusterid":
            v = (self.cta[d] // self.cluster[d]).astype(np.uint32)
        elif n == "%nclusterid":
            v = np.uint32(self.grid[d] // self.cluster[d])
        else:
            raise self.err("unsupported", f"special register {n}")
        self._cache[key] = v
        return v

    def sym_addr(self, name, space):
        if name in self.soffs:
            return self.soffs[name] + (SHARED_BASE if space == "generic" else 0)
        if name in self.loffs:
            return self.loffs[name] + (LOCAL_BASE if space == "generic" else 0)
        if name in self.gaddr:
            return self.gaddr[name]
        raise self.err("unsupported", f"address of symbol {name!r} (a param or unknown variable)")

    def put(self, a, val, t, m):
        if isinstance(a, P.Sink):
            return
        if not isinstance(a, P.Reg):
            raise self.err("unsupported", f"destination {a}")
        odt = self.regs.dtypes[a.name]
        if m is None and type(val) is np.ndarray and val.dtype == odt and DT.get(t) is odt.type and t != "pred" \
                and val.shape == (self.N,):    # the common case sooner (what the lines below store for it)
            self.regs[a.name] = val
            return
        new = _stored(np.asarray(val), t, odt)
        if m is None:
            if new.shape == (self.N,) or new.ndim == 0 and self.regs.scalar_ok:
                self.regs[a.name] = np.asarray(new)    # (a 0-d value: the same in every thread)
            else:
                self.regs[a.name] = np.full(self.N, new, odt)
        else:
            self.regs[a.name] = np.where(m, new, self.regs[a.name])

    def put_at(self, a, ids, vals, t):
        """put(a, v, t, mask) for the threads ids (distinct) alone, v[ids] = vals: the register's other threads
        keep their values, and no array over the whole batch is made until the register is read."""
        if isinstance(a, P.Sink):
            return
        if not isinstance(a, P.Reg):
            raise self.err("unsupported", f"destination {a}")
        self.regs.scatter(a.name, ids, _stored(np.asarray(vals), t, self.regs.dtypes[a.name]))

    def err(self, kind, msg, t=None):
        ins = self._ins
        if t is None and self._m is not None and self._m.any():
            t = int(np.flatnonzero(self._m)[0])
        return EmulatorError(kind, msg, **(self.where(t, ins) if t is not None else {"instr": ins}))

    # float values of a typed operand: float32 for f32/f16/bf16 (exact), float64 for f64
    def fget(self, a, t):
        v = self.get(a, t)
        if t == "f16":
            return np.asarray(v).view(np.float16).astype(np.float32)
        if t == "bf16":
            return F.bf16_to_f32(v)
        return v

