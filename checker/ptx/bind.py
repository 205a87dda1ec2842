"""Binding a variant's launches to concrete buffers and dims: geometry from its expressions, arguments
typed as the PTX params are. Shared by the witness replay (checker), conformance and the engine, which
launch the bound arguments through kreg.runtime."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kreg.checker.ptx import parse as P
from kreg.registry.expr import ExprError
from kreg.registry.limits import geometry_problems
from kreg.registry.schema import DTYPES, Op, Variant

# PTX param type -> NumPy scalar type used to pass it by value
PARAM_NP = {"u64": np.uint64, "s64": np.int64, "b64": np.uint64, "u32": np.uint32, "s32": np.int32,
            "b32": np.uint32, "f32": np.float32, "f64": np.float64, "u16": np.uint16, "s16": np.int16,
            "b16": np.uint16, "u8": np.uint8, "s8": np.int8, "b8": np.uint8}
ARG_NP = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}


class BindError(ValueError):
    pass


@dataclass(frozen=True)
class BoundLaunch:
    entry: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    args: tuple          # NumPy scalars, one per PTX param, in order (pointers as np.uint64 addresses)


def scalar_value(op: Op, name: str, scalars: dict, types: dict[str, str]):
    p = op.params[name]
    if name in scalars:
        v = scalars[name]
    elif p.default is not None:
        v = p.default
    else:
        raise BindError(f"scalar param {name!r} of op {op.name} has no value and no default")
    return np.dtype(DTYPES[op.dtype_of(name, types)][1]).type(v)


def bind(variant: Variant, op: Op, module: P.Module, dims: dict[str, int], pointers: dict[str, int],
         scalars: dict | None = None) -> list[BoundLaunch]:
    """Each launch of the variant with concrete geometry and arguments typed as the PTX params are.
    `pointers` maps every tensor param and scratch buffer to its device address."""
    scalars = scalars or {}
    why = op.dims_ok(dims) or variant.dims_problems(dims)
    if why:
        raise BindError(f"dims {dims} not allowed by op {op.name} ({variant.name}): {'; '.join(why)}")
    out = []
    for ln in variant.launches:
        kernel = module.kernel(ln.entry)
        if len(kernel.params) != len(ln.args):
            raise BindError(f"{variant.name}: launch {ln.entry} passes {len(ln.args)} args but the kernel takes "
                            f"{len(kernel.params)} params")
        args = []
        for a, p in zip(ln.args, kernel.params):
            if p.type not in PARAM_NP or p.size != np.dtype(PARAM_NP[p.type]).itemsize:
                raise BindError(f"{ln.entry}: param {p.name} of type .{p.type} ({p.size} bytes) cannot be bound")
            want = PARAM_NP[p.type]
            if a.param is not None and (a.param in variant.scratch or op.params[a.param].role != "scalar"
                                        or op.params[a.param].shape):
                if a.param not in pointers:
                    raise BindError(f"no buffer for {a.param!r}")
                if p.size != 8:
                    raise BindError(f"{ln.entry}: {a.param} is a pointer but param {p.name} is .{p.type}")
                args.append(np.uint64(pointers[a.param]))
            elif a.param is not None:
                v = scalar_value(op, a.param, scalars, variant.types)
                if np.dtype(want).itemsize != v.dtype.itemsize or (v.dtype.kind == "f") != (np.dtype(want).kind == "f"):
                    raise BindError(f"{ln.entry}: scalar {a.param} is {v.dtype} but param {p.name} is .{p.type}")
                args.append(v.view(want) if v.dtype != want else v)
            else:
                try:
                    v = int(a.expr(dims))
                except ExprError as e:
                    raise BindError(f"{ln.entry}: argument cannot be evaluated: {e}") from None
                t = np.dtype(ARG_NP[a.ctype])
                lo, hi = (np.iinfo(t).min, np.iinfo(t).max)
                if not lo <= v <= hi:
                    raise BindError(f"{ln.entry}: argument {a.expr.text} = {v} does not fit {a.ctype}")
                if t.itemsize != p.size:
                    raise BindError(f"{ln.entry}: argument {a.expr.text} is {a.ctype} but param {p.name} is .{p.type}")
                args.append(t.type(v).view(want) if t != want else t.type(v))
        try:
            g, b, sh = ln.geometry(dims)
        except ExprError as e:
            raise BindError(f"{ln.entry}: launch geometry cannot be evaluated: {e}") from None
        why = geometry_problems(g, b, sh)
        if why:
            raise BindError(f"{ln.entry}: grid {g} block {b} shared {sh} at dims {dims}: {'; '.join(why)}")
        out.append(BoundLaunch(ln.entry, g, b, sh, tuple(args)))
    return out


def buffer_sizes(variant: Variant, op: Op, dims: dict[str, int]) -> dict[str, int]:
    """Bytes of every tensor param and scratch buffer at these dims."""
    sizes = {}
    for p in op.params.values():
        if p.role == "scalar" and not p.shape:
            continue
        sizes[p.name] = _elements(op.shape(p.name, dims)) * DTYPES[op.dtype_of(p.name, variant.types)][0]
    for s in variant.scratch.values():
        sizes[s.name] = _elements(variant.scratch_shape(s.name, dims)) * DTYPES[s.dtype][0]
    return sizes


def _elements(shape: tuple[int, ...]) -> int:
    """np.prod(shape, dtype=np.int64) as a Python int (wrapped to int64 as NumPy wraps it), without NumPy's
    per-call overhead."""
    n = math.prod(shape)
    return n if -(1 << 63) <= n < 1 << 63 else (n + (1 << 63)) % (1 << 64) - (1 << 63)
