"""On the GPU: does a module-scope global named SMEM move the shared accesses of a module's first entry
(checker/ptx/toolchain.py)? Two entries, each s[tid] = tid; bar.sync; out[tid] = s[tid ^ 1] in its own static
shared array, beside one `.global .u32 NAME`; loaded straight through CuPy (kreg's runtime refuses it).
The last entry runs first (ptxas never relocates it), then the first. One NAME per process (a fault ends
the CUDA context):

    compute-sanitizer --tool memcheck python3 bench/smem_symbol_gpu.py SMEMX   # control: both entries ok
    compute-sanitizer --tool memcheck python3 bench/smem_symbol_gpu.py SMEM    # expected: k1 Invalid __shared__
                                                                               # write (or wrong values / fault)
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

ENTRY = """.visible .entry {k}(.param .u64 p)
{{
 .reg .b32 %r<8>; .reg .b64 %rd<8>;
 .shared .align 16 .b8 buf_{k}[1024];
 mov.u32 %r2, %tid.x; shl.b32 %r3, %r2, 2;
 mov.u64 %rd1, buf_{k}; cvt.u32.u64 %r1, %rd1; add.s32 %r4, %r1, %r3;
 st.shared.u32 [%r4], %r2; bar.sync 0;
 xor.b32 %r5, %r3, 4; add.s32 %r6, %r1, %r5; ld.shared.u32 %r7, [%r6];
 ld.param.u64 %rd2, [p]; cvta.to.global.u64 %rd3, %rd2; mul.wide.u32 %rd4, %r2, 4; add.s64 %rd5, %rd3, %rd4;
 st.global.u32 [%rd5], %r7;
 ret;
}}
"""


def module_ptx(name: str) -> str:
    return (".version 9.0\n.target sm_90\n.address_size 64\n"
            f".global .align 4 .u32 {name} = 1;\n" + ENTRY.format(k="k1") + ENTRY.format(k="k2"))


def main(name: str) -> int:
    import cupy as cp
    path = Path(tempfile.mkdtemp()) / f"smem_symbol_{name}.ptx"
    path.write_text(module_ptx(name))
    mod = cp.RawModule(path=str(path))
    want = np.arange(256, dtype=np.uint32) ^ 1
    ok = True
    for entry in ("k2", "k1"):
        out = cp.zeros(256, dtype=cp.uint32)
        try:
            mod.get_function(entry)((1,), (256,), (out,))
            cp.cuda.Device().synchronize()
        except Exception as e:
            print(f"global {name}: {entry}: FAULT {type(e).__name__}: {e}")
            return 1
        got = cp.asnumpy(out)
        bad = int(np.count_nonzero(got != want))
        print(f"global {name}: {entry}: {'ok' if not bad else f'{bad} of 256 wrong, out[0:4] = {got[:4].tolist()}'}")
        ok &= bad == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "SMEM"))
