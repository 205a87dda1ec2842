"""Checks of a variant that need no launch, run before any work: its launch geometry at every case it
will run is inside the CUDA limits (registry/limits.py), and a variant whose PTX adds floats atomically
(order-dependent results) does not claim to be deterministic. conformance.numerics.run_numerics calls
preflight() first; the verify pipeline may call geometry() before compiling as well."""
from __future__ import annotations

import re

from .expr import ExprError
from .limits import geometry_problems

FLOAT_TYPES = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64"}
_ATOMIC = re.compile(r"(?<![\w.$%])(atom|red)((?:\.[\w:]+)+)\s")     # also inside inline-asm braces
FLOAT_ATOMICS = "uses float atomics (order-dependent results) but does not declare `deterministic: false`"


def launch_problems(variant, op, cases: dict[str, dict[str, int]]) -> list[str]:
    """Each case at which one of the variant's launches (its grid, block and shared expressions) is
    outside the CUDA limits or cannot be evaluated: one sentence naming the case, dims and limit."""
    why = []
    for case, dims in cases.items():
        for i, ln in enumerate(variant.launches):
            where = f"case {case} {dims}: launch {i + 1} ({ln.entry})"
            try:
                grid, block, shared = ln.geometry(dims)
            except ExprError as e:
                why.append(f"{where}: launch geometry cannot be evaluated: {e}")
                continue
            why += [f"{where}: grid {grid} block {block} shared {shared}: {w}"
                    for w in geometry_problems(grid, block, shared)]
    return why


def geometry(variant, op, cases: dict[str, dict[str, int]]) -> list[str]:
    """One sentence per case and launch whose grid, block or shared memory exceeds a CUDA limit (or
    whose expressions cannot be evaluated there)."""
    return launch_problems(variant, op, cases)


def float_atomics(ptx: str) -> list[str]:
    """The distinct atomic float additions of a PTX text (atom/red .add on f16, bf16, f32, f64, ...)."""
    found = []
    for m in _ATOMIC.finditer(ptx):
        mods = m[2].split(".")[1:]
        if "add" in mods and FLOAT_TYPES & set(mods):
            text = m[1] + m[2]
            if text not in found:
                found.append(text)
    return found


def determinism(variant, ptx: str) -> list[str]:
    """A variant declared deterministic (the default) must not add floats atomically."""
    if not variant.deterministic:
        return []
    found = float_atomics(ptx)
    return [f"{FLOAT_ATOMICS} ({', '.join(found[:3])})"] if found else []


def preflight(variant, op, cases: dict[str, dict[str, int]], ptx: str | None = None) -> list[str]:
    """Every reason to reject the variant before launching it (empty if none)."""
    return geometry(variant, op, cases) + (determinism(variant, ptx) if ptx is not None else [])
