"""One variant at one case on the GPU through the conformance numerics (all checks), for running under
compute-sanitizer when a kernel faults:

    compute-sanitizer --tool memcheck python3 bench/one_case_gpu.py VARIANT 'T=128,N=256,K=64' [OUT]
"""
from __future__ import annotations

import sys

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import open_harness
from kreg.conformance.numerics import run_numerics
from kreg.registry.catalog import load_catalog


def main(name: str, dims: str, out: str | None = None) -> int:
    cat = load_catalog()
    e = cat.find(name)
    v, op = e.variant, cat.ops[e.op]
    d = {k: int(x) for k, x in (kv.split("=") for kv in dims.split(","))}
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
    num = run_numerics(open_harness("gpu"), ptx, v, op, {"case": d})
    text = f"{name} {d}: {num.status}\n" + "\n".join(num.failures()) + "\n"
    print(text, end="")
    if out:
        open(out, "a").write(text)
    return 0 if num.status == "pass" else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
