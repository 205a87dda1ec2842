"""Replaying a prover witness in the CPU emulator: run the variant's launches at the witness's dims
(inputs zero, index tensors at the low end of their value range) with access tracing, and look for
the violation the witness describes — an out-of-bounds, misaligned or barrier-divergence stop, a write into an
input buffer, an access outside every declared buffer, or a conflicting pair of accesses by the two
witness threads that no barrier orders."""
from __future__ import annotations

import numpy as np

from kreg.registry.schema import DTYPES, Op, Variant

from kreg.checker.ptx import parse as P
from kreg.checker.ptx.bind import bind

MAX_BYTES = 64 << 20
MAX_THREADS = 1 << 17
MAX_STEPS = 200_000          # issue steps of the emulator, per launch
MAX_TRACE = 1 << 21          # traced accesses, each a Python object


def replay(variant: Variant, op: Op, module: P.Module, prop: str, w: dict) -> str:
    """"confirmed" | "not-confirmed" | "not-run" (too large, or the emulator could not run it)."""
    from kreg.checker.emulator import machine as E
    dims = w.get("dims") or {}
    if op.dims_ok(dims):
        return "not-run"
    sizes = {}
    for name, p in op.params.items():
        if p.role != "scalar" or p.shape:
            n = int(np.prod(op.shape(name, dims), dtype=object)) if p.shape else 1
            sizes[name] = n * DTYPES[op.dtype_of(name, variant.types)][0]
    for name, s in variant.scratch.items():
        sizes[name] = int(np.prod(variant.scratch_shape(name, dims), dtype=object)) * DTYPES[s.dtype][0]
    if sum(sizes.values()) > MAX_BYTES:
        return "not-run"
    mem = E.Memory()
    ptrs = {n: mem.alloc(max(sz, 1), n) for n, sz in sizes.items()}
    for name, p in op.params.items():
        if p.values is not None and name in ptrs and sizes[name]:
            dt = np.dtype(DTYPES[op.dtype_of(name, variant.types)][1])
            lo = int(p.values[0](dims))
            mem.write(ptrs[name], np.full(sizes[name] // dt.itemsize, lo, dt).tobytes())
    try:
        bound = bind(variant, op, module, dims, ptrs, {})
    except Exception:
        return "not-run"
    upto = w.get("launch", 0)
    for i, b in enumerate(bound[:upto + 1]):
        if np.prod(b.grid) * np.prod(b.block) > MAX_THREADS:
            return "not-run"
        try:
            res = E.launch(module, b.entry, b.grid, b.block, b.shared, b.args, mem, trace=(i == upto),
                           max_steps=MAX_STEPS, max_trace=MAX_TRACE)
        except E.EmulatorError as e:
            if e.kind in ("out-of-bounds", "misaligned") and prop == "in_bounds":
                return "confirmed"
            if e.kind == "barrier-divergence" and prop == "barrier_safe":
                return "confirmed"
            return "not-confirmed" if e.kind in ("out-of-bounds", "barrier-divergence", "misaligned") else "not-run"
        except Exception:
            return "not-run"
    trace = res.trace if res.trace is not None else E.AccessTrace()
    ranges = {n: (ptrs[n], ptrs[n] + sizes[n]) for n in ptrs}
    if prop in ("read_only", "in_bounds"):
        addr, width, kind, _ = trace.columns("global")     # the global accesses as arrays (kind 0: read)
    if prop == "read_only":
        ins = [ranges[n] for n, p in op.params.items() if p.role == "in" and n in ranges]
        hit = any(((kind != 0) & (lo <= addr) & (addr < hi)).any() for lo, hi in ins)
        return "confirmed" if hit else "not-confirmed"
    if prop == "in_bounds":
        inside = np.zeros(len(addr), bool)
        for lo, hi in ranges.values():
            inside |= (lo <= addr) & (addr + width <= hi)
        return "confirmed" if not inside.all() else "not-confirmed"
    if prop == "race_free":
        ts = [(tuple(b), tuple(t)) for b, t in zip(w.get("blocks", []), w.get("threads", []))]
        if len(ts) != 2:
            return "not-run"
        if ts[0] == ts[1]:
            return "not-confirmed"   # one thread against its own pending cp.async: the trace cannot order them
        if ts[0][0] == ts[1][0] and _same_warp(ts[0][1], ts[1][1], w.get("block") or [1, 1, 1]) and \
                any(i.op == "bar" and "warp" in i.mods for k in module.kernels.values() for i in k.instrs):
            return "not-confirmed"   # the trace's epochs count block barriers only: a __syncwarp may order them
        xa, xb = trace.of_threads([ts[0]]), trace.of_threads([ts[1]])
        for a in xa:
            for b in xb:
                if a.kind == b.kind == "read" or a.kind == b.kind == "atomic" or a.space != b.space:
                    continue
                if a.address < b.address + b.width and b.address < a.address + a.width:
                    if a.block != b.block and a.space == "global" or a.block == b.block and a.epoch == b.epoch:
                        return "confirmed"
        return "not-confirmed"
    return "not-confirmed"


def _same_warp(ta, tb, block) -> bool:
    def lin(t):
        return t[0] + t[1] * block[0] + t[2] * block[0] * block[1]
    return lin(ta) // 32 == lin(tb) // 32
