"""Toolchain hazards: PTX that is correct by the PTX ISA (so the emulator runs it and the prover proves it)
but that the sm_90 assembler turns into different machine code. A proof about such PTX says nothing about
what runs, so the prover gives no verdict but `unknown` for it and the runtime refuses to load it.

Known hazard (ptxas 13.0.88, and the driver's JIT on the H100, which faulted the same way): in a module
with more than one entry, the assembler relocates the shared-window addresses of every entry but the last
against a symbol it looks up by the name SMEM, and the local-window addresses against the name LOCAL; a
module-scope variable of that name (NVRTC emits namespace-scope `constexpr int SMEM = ...;` as
`.global .u32 SMEM`) captures the lookup, so every shared (or local) access of those entries lands at an
offset taken from that variable's global address (gemm_mma_bf16: `Invalid __shared__ write ... Access to
0x7b400 is out of bounds` at the first cp.async). With another name there is no relocation at all.
Found by assembling each of the 43,000 identifiers in ptxas' own strings, and 792 names like XMEM / XXMEM,
as module globals beside two entries that use static, dynamic shared, local and const memory: only these
two names relocate (bench/ptxas_symbol_hazards.py reproduces it where ptxas is on the PATH)."""
from __future__ import annotations

from . import ptx as P

# name -> the address window whose relocations a module-scope variable of that name captures
RESERVED_NAMES = {"SMEM": "shared", "LOCAL": "local"}


def hazards(module: P.Module) -> list[str]:
    """Why the assembler would not translate this module as the PTX ISA says: empty when it would."""
    return [f"module-scope variable {name} (.{var.space}): ptxas binds the {RESERVED_NAMES[name]}-memory "
            f"addresses of every entry but the last to a symbol named {name}, so this variable would "
            f"relocate them (rename it)"
            for name, var in module.globals.items() if name in RESERVED_NAMES]
