"""Which module-scope symbol names make ptxas relocate the shared / local addresses of a kernel against
them (checker/ptx/toolchain.py). A module with two entries that use static and dynamic shared, local and
const memory, plus one `.global .u32 NAME` per candidate name, is assembled for sm_90; in a correct cubin
no instruction of an entry is relocated at all, so a text relocation names a capturing symbol. Needs
ptxas on the PATH (no GPU):

    python bench/ptxas_symbol_hazards.py                  # SMEM, LOCAL and controls
    python bench/ptxas_symbol_hazards.py --scan NAMES     # a file of candidate names, 400 per module
                                                          # (e.g. strings -n 3 $(which ptxas) | grep -E '^[A-Za-z_]\\w{2,40}$')
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from kreg.checker.ptx.toolchain import text_relocations

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.ptxas_probe import ENTRIES, assemble, module_ptx  # noqa: E402


def main(argv) -> int:
    if not shutil.which("ptxas"):
        print("ptxas is not on the PATH")
        return 2
    if argv[:1] == ["--scan"]:
        names = sorted({n for n in Path(argv[1]).read_text().split()} - {"cvar", "dyn", "loc", "p", "n",
                                                                         *ENTRIES, *(f"buf_{k}" for k in ENTRIES)})
        hits = Counter()
        for i in range(0, len(names), 400):
            try:
                hits += text_relocations(assemble(module_ptx(names[i:i + 400])))
            except subprocess.CalledProcessError as e:
                print(f"names {i}..{i + 399}: ptxas failed: {e.stderr.decode()[:200]}")
        print(f"{len(names)} names scanned; capturing: {dict(hits) or 'none'}")
        return 0
    for n in ("SMEM", "LOCAL", "SMEMX", "smem", "GMEM", "LMEM"):
        print(f"{n:6s}: text relocations {dict(text_relocations(assemble(module_ptx([n])))) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
