"""Checks of a variant that need no launch, run before any work: its launch geometry at every case it
will run is inside the CUDA limits (registry/limits.py); its compiled PTX is of bounded size and
declared registers, and each kernel's local memory, `.maxnreg` and static + dynamic shared memory are
inside the target's limits; and a variant whose PTX adds floats atomically (order-dependent results)
does not claim to be deterministic. conformance.numerics.run_numerics calls
preflight() first; the verify pipeline may call geometry() before compiling as well."""
from __future__ import annotations

import re

from .expr import ExprError
from .limits import (LOCAL_MAX_BYTES, PTX_MAX_BYTES, PTX_MAX_REGISTERS, REGISTERS_PER_THREAD_MAX,
                     SHARED_MAX_BYTES, geometry_problems)

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


_REG = re.compile(r"(?<![\w.$%])\.reg\s+(?:\.v(\d)\s+)?\.\w+\s+([^;]*);")
_ENTRY = re.compile(r"\.entry\s+([\w$]+)")
_VAR = re.compile(r"(?<![\w.$%])\.(shared|local)\s+(?:\.align\s+\d+\s+)?(?:\.v(\d)\s+)?\.(\w+)\s+([\w$]+)"
                  r"((?:\s*\[\s*\d*\s*\])*)")
_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
          "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16, "f16x2": 4, "bf16x2": 4}
_MAXNREG = re.compile(r"\.maxnreg\s+(\d+)")


def declared_registers(ptx: str) -> int:
    """Virtual registers the PTX declares (`.reg .t %r<N>` counts N; a vector type its width each)."""
    n = 0
    for m in _REG.finditer(ptx):
        width = int(m[1] or 1)
        for item in m[2].split(","):
            r = re.search(r"<\s*(\d+)\s*>", item)
            n += width * (int(r[1]) if r else 1)
            if n > PTX_MAX_REGISTERS:
                return n
    return n


def _var_bytes(m: re.Match) -> int:
    n = _SIZES.get(m[3], 8) * int(m[2] or 1)
    for d in re.findall(r"\[\s*(\d*)\s*\]", m[5]):
        n *= int(d) if d else 0            # an unsized array: extern (dynamic) shared memory
    return n


def kernel_memory(ptx: str) -> dict[str, tuple[int, int, int | None]]:
    """Per kernel (entry): (local bytes per thread, static shared bytes, .maxnreg or None). A kernel's
    static shared memory is what it declares plus the module's shared variables it names."""
    starts = [(m.start(), m[1]) for m in _ENTRY.finditer(ptx)]
    module = ptx[:starts[0][0]] if starts else ptx
    glob_shared = {m[4]: _var_bytes(m) for m in _VAR.finditer(module) if m[1] == "shared"}
    out = {}
    for i, (at, name) in enumerate(starts):
        body = ptx[at:starts[i + 1][0] if i + 1 < len(starts) else len(ptx)]
        local = sum(_var_bytes(m) for m in _VAR.finditer(body) if m[1] == "local")
        shared = sum(_var_bytes(m) for m in _VAR.finditer(body) if m[1] == "shared")
        shared += sum(b for v, b in glob_shared.items() if re.search(rf"(?<![\w$]){re.escape(v)}(?![\w$])", body))
        nreg = _MAXNREG.search(body)
        out[name] = (local, shared, int(nreg[1]) if nreg else None)
    return out


def resources(variant, op, cases: dict[str, dict[str, int]], ptx: str) -> list[str]:
    """Why the compiled PTX is outside what kreg reads or the target runs: its size, the registers it
    declares, and per kernel local memory per thread, .maxnreg, and static + dynamic shared memory of
    each launch at every case (empty if none)."""
    size = len(ptx.encode())
    if size > PTX_MAX_BYTES:
        return [f"the compiled PTX is {size} bytes, more than the {PTX_MAX_BYTES} kreg reads (refused before "
                "proving or running it)"]
    regs = declared_registers(ptx)
    if regs > PTX_MAX_REGISTERS:
        return [f"the compiled PTX declares more than {PTX_MAX_REGISTERS} registers ({regs} counted so far; "
                "refused before proving or running it)"]
    mem = kernel_memory(ptx)
    why = []
    for name, (local, shared, nreg) in mem.items():
        if local > LOCAL_MAX_BYTES:
            why.append(f"kernel {name} uses {local} bytes of local memory per thread, more than the CUDA limit "
                       f"of {LOCAL_MAX_BYTES} (512 KiB)")
        if nreg is not None and nreg > REGISTERS_PER_THREAD_MAX:
            why.append(f"kernel {name} asks for .maxnreg {nreg}, more than the {REGISTERS_PER_THREAD_MAX} registers "
                       "a thread may have")
        if shared > SHARED_MAX_BYTES:
            why.append(f"kernel {name} declares {shared} bytes of static shared memory, more than the limit of "
                       f"{SHARED_MAX_BYTES} (227 KiB)")
    if why:
        return why
    from .expr import ExprError
    for case, dims in cases.items():
        for ln in variant.launches:
            if ln.entry not in mem:
                continue
            try:
                dyn = int(ln.shared(dims))
            except (ExprError, TypeError, ValueError):
                continue                      # geometry() says why
            if mem[ln.entry][1] + dyn > SHARED_MAX_BYTES:
                return [f"case {case} {dims}: kernel {ln.entry}: {mem[ln.entry][1]} bytes of static and {dyn} of "
                        f"dynamic shared memory, {mem[ln.entry][1] + dyn} in all, more than the limit of "
                        f"{SHARED_MAX_BYTES} (227 KiB)"]
    return []


def preflight(variant, op, cases: dict[str, dict[str, int]], ptx: str | None = None) -> list[str]:
    """Every reason to reject the variant before launching it (empty if none)."""
    if ptx is None:
        return geometry(variant, op, cases)
    return geometry(variant, op, cases) + resources(variant, op, cases, ptx) + determinism(variant, ptx)
