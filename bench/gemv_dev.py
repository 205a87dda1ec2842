"""gemv_residual (the engine's o / down projections) knob candidates of helper "decode" on the GPU, timed
by the conformance timing (conformance/speed.py time_case: plain graph median and the PDL figure) on the
Qwen3 projections it serves, numerics checked on two cases first; % of the copy bandwidth measured in
the same process. A candidate: (label, slices, rows, groups, extra -D options). (Run 2, 08:54 UTC: a
GEMV_BATCH knob that loaded B K steps of W before the first product lost everywhere, 9.66 / 10.48 us
against 8.80 at 4b-o, and was dropped.)

    python3 bench/gemv_dev.py [OUT.txt]
"""
from __future__ import annotations

import datetime
import sys
from dataclasses import replace

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.devices import open_device
from kreg.conformance.numerics import run_numerics
from kreg.conformance.speed import copy_bandwidth, time_case
from kreg.registry.catalog import load_catalog
from kreg.registry.expr import parse

CANDIDATES = [   # (label, slices, rows, groups, extra options)
    ("default", 4, 2, 2, ()),
    ("u4", 4, 2, 2, ("-DGEMV_UNROLL=4",)),
    ("pf2", 4, 2, 2, ("-DGEMV_PREFETCH=2",)),
    ("pf4", 4, 2, 2, ("-DGEMV_PREFETCH=4",)),
    ("s5r2g2", 5, 2, 2, ()),
    ("r1", 4, 1, 2, ("-DGEMV_UNROLL=2",)),
]
SHAPES = ["qwen3-4b-o", "qwen3-4b-down", "qwen3-8b-o", "qwen3-0.6b-o", "qwen3-32b-o"]


def configured(v, label, slices, rows, groups, extra):
    opts = tuple(o for o in v.options if not o.startswith(("-DGEMV_ROWS", "-DGEMV_UNROLL"))) + (
        f"-DGEMV_SLICES={slices}", f"-DGEMV_ROWS={rows}", f"-DGEMV_GROUPS={groups}") + tuple(extra)
    ln = replace(v.launches[0], grid=(parse(f"cdiv(N, {groups * rows})"),), block=(parse(32 * groups * slices),))
    return replace(v, options=opts, launches=(ln,), name=label)


def main(out_path: str | None = None) -> None:
    dev = open_device("gpu")
    cat = load_catalog()
    op, base = cat.ops["gemv_residual"], cat.find("gemv_residual_bf16_safe").variant
    bw = copy_bandwidth(dev)
    lines = [f"# gemv_residual bf16 candidates (helper decode): {dev.describe()}  "
             f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  copy {bw / 1e12:.2f} TB/s",
             "# " + "; ".join(f"{c[0]}=s{c[1]}r{c[2]}g{c[3]}{''.join(' ' + o for o in c[4])}" for c in CANDIDATES),
             "# per shape: us (plain graph median) / % of copy / pdl us"]
    mods = {}
    for c in CANDIDATES:
        v = configured(base, *c)
        try:
            mod = dev.load(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
            num = run_numerics(dev, mod.ptx, v, op, {k: op.cases[k] for k in ("ragged-n37-k1000", "qwen3-4b-o")})
        except Exception as exc:
            lines.append(f"{c[0]}: FAILED {type(exc).__name__}: {str(exc)[:200]}")
            continue
        if num.status != "pass":
            lines.append(f"{c[0]}: numerics {num.status}: {num.failures()[:2]}")
            continue
        mods[c[0]] = (v, mod)
    print("\n".join(lines), flush=True)
    for shape in SHAPES:
        dims = op.cases[shape]
        nbytes = op.traffic_bytes(dims, {"DT": "bf16"})
        parts = []
        for label, (v, mod) in mods.items():
            r = time_case(dev, mod, v, op, dims, bw)
            parts.append(f"{label} {r['median_us']:.2f}/{100 * nbytes / r['median_us'] / 1e6 / (bw / 1e12):.1f}%"
                         f"/{r['pdl_us'] or 0:.2f}")
        msg = f"{shape:14s} {nbytes / 1e6:6.1f} MB  " + "  ".join(parts)
        print(msg, flush=True)
        lines.append(msg)
    if out_path:
        open(out_path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
