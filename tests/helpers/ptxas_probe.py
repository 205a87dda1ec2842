"""A PTX module that shows which module-scope symbol names make ptxas relocate an entry's shared / local
addresses (checker/ptx/toolchain.py): two entries using static and dynamic shared, local and const memory,
plus one `.global .u32 NAME` per candidate name; and ptxas to assemble it for sm_90 (on the PATH)."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

ENTRIES = ("k_zq_1", "k_zq_2")
_BODY = """.visible .entry {k}(.param .u64 p, .param .u32 n)
{{
 .reg .b32 %r<20>; .reg .b64 %rd<20>;
 .local .align 4 .b8 loc[64];
 .shared .align 16 .b8 buf_{k}[1024];
 mov.u32 %r2, %tid.x; shl.b32 %r3, %r2, 2;
 mov.u64 %rd1, buf_{k}; cvt.u32.u64 %r1, %rd1; add.s32 %r4, %r1, %r3; st.shared.u32 [%r4], %r2;
 mov.u64 %rd10, dyn; cvt.u32.u64 %r10, %rd10; add.s32 %r11, %r10, %r3; st.shared.u32 [%r11], %r2;
 bar.sync 0;
 xor.b32 %r5, %r3, 4; add.s32 %r6, %r1, %r5; ld.shared.u32 %r7, [%r6];
 add.s32 %r12, %r10, %r5; ld.shared.u32 %r13, [%r12]; add.s32 %r7, %r7, %r13;
 ld.param.u32 %r14, [n]; and.b32 %r15, %r14, 15; shl.b32 %r15, %r15, 2; mov.u64 %rd11, loc;
 cvt.u64.u32 %rd12, %r15; add.s64 %rd13, %rd11, %rd12; st.local.u32 [%rd13], %r7;
 and.b32 %r16, %r2, 12; cvt.u64.u32 %rd14, %r16; add.s64 %rd15, %rd11, %rd14; ld.local.u32 %r17, [%rd15];
 add.s32 %r7, %r7, %r17;
 and.b32 %r18, %r2, 3; shl.b32 %r18, %r18, 2; mov.u64 %rd16, cvar; cvt.u64.u32 %rd17, %r18;
 add.s64 %rd18, %rd16, %rd17; ld.const.u32 %r19, [%rd18]; add.s32 %r7, %r7, %r19;
 ld.param.u64 %rd2, [p]; cvta.to.global.u64 %rd3, %rd2; mul.wide.u32 %rd4, %r2, 4; add.s64 %rd5, %rd3, %rd4;
 st.global.u32 [%rd5], %r7;
 ret;
}}
"""


def module_ptx(names) -> str:
    head = (".version 9.0\n.target sm_90\n.address_size 64\n.const .align 4 .u32 cvar[4] = {1, 2, 3, 4};\n"
            ".extern .shared .align 16 .b8 dyn[];\n")
    return head + "".join(f".global .align 4 .u32 {n} = 1;\n" for n in names) + "".join(
        _BODY.format(k=k) for k in ENTRIES)


def assemble(ptx: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "m.ptx", Path(d) / "m.cubin"
        src.write_text(ptx)
        subprocess.run(["ptxas", "-arch=sm_90", str(src), "-o", str(out)], check=True, capture_output=True)
        return out.read_bytes()
