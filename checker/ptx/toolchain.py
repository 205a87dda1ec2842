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
two names relocate (bench/ptxas_symbol_hazards.py reproduces it where ptxas is on the PATH).

Beyond the names: in a correct sm_90 cubin no instruction of an entry is relocated, so where the source
is at hand, a proof also asks NVRTC's own assembler for the cubin of the same PTX bytes and is not kept
if any entry's code is relocated (assembled_hazards)."""
from __future__ import annotations

import struct
from collections import Counter

from kreg.checker.ptx import parse as P

# name -> the address window whose relocations a module-scope variable of that name captures
RESERVED_NAMES = {"SMEM": "shared", "LOCAL": "local"}


def hazards(module: P.Module) -> list[str]:
    """Why the assembler would not translate this module as the PTX ISA says: empty when it would."""
    return [f"module-scope variable {name} (.{var.space}): ptxas binds the {RESERVED_NAMES[name]}-memory "
            f"addresses of every entry but the last to a symbol named {name}, so this variable would "
            f"relocate them (rename it)"
            for name, var in module.globals.items() if name in RESERVED_NAMES]


def text_relocations(elf: bytes) -> Counter:
    """Symbol name -> relocations applied to the code (.text.*) sections of a cubin (ELF64, little-endian)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]

    def name(strtab, off):
        base = secs[strtab][4] + off
        return elf[base:elf.index(b"\0", base)].decode(errors="replace")
    names = [name(shstrndx, s[0]) for s in secs]
    out = Counter()
    for s in secs:
        if s[1] != 4 or not names[s[7]].startswith(".text."):      # SHT_RELA applied to a code section
            continue
        symtab = secs[s[6]]
        for off in range(s[4], s[4] + s[5], 24):
            _, info, _ = struct.unpack_from("<QQq", elf, off)
            out[name(symtab[6], struct.unpack_from("<I", elf, symtab[4] + (info >> 32) * 24)[0])] += 1
    return out


def assembled_hazards(ptx: str, source: str, name: str, options=()) -> list[str] | None:
    """What is relocated in the entries' code of the cubin NVRTC assembles from `source` (empty: nothing);
    None when that source's PTX is not `ptx` byte for byte (nothing can be said about `ptx` then)."""
    from kreg.checker.ptx.compile import assemble_cuda, compile_cuda
    if compile_cuda(source, name, options).ptx != ptx:      # cached: a mutant's PTX costs no second compile
        return None
    got, cubin = assemble_cuda(source, name, options)
    if got != ptx:
        return None
    return [f"ptxas relocates {n} instruction(s) of the entries' code against symbol {sym}: the machine "
            f"code's addresses are not the PTX's" for sym, n in sorted(text_relocations(cubin).items())]
