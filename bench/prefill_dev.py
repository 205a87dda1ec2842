"""The prefill helper's candidates of attention_prefill_tc.cu (-D builds of the registered safe variant with
their own launch geometry), checked and timed in one process:

    python bench/prefill_dev.py numerics cpu [NAME ...]  # conformance numerics of each candidate on the CPU
                                                        # cases `kreg verify` picks (the PTX emulator)
    python3 bench/prefill_dev.py numerics gpu [NAME ...] # the same on the GPU at the small named cases,
                                                        # 4B T = 2048 and the 4B chunk after a prefix
    python bench/prefill_dev.py prove [NAME ...]          # the four proofs of each candidate (bf16), under the
                                                        # verify pipeline's budget (30 s of solver work), and
                                                        # the solver work it took
    python3 bench/prefill_dev.py speed OUT.txt [NAME ...]  # median us (conformance timing) beside torch SDPA
                                                        # flash at the Qwen3-4B heads, T = 2048 and 8192

Candidates (CANDIDATES: name -> -D options; KREG_WARPS sets the block's rows, 16 a warp): the registered
build, the rows counted from the end (longest first, KREG_FROM_END), 8 warps (128 rows a block: each K/V tile
loaded once for twice the rows), one register stage for K and V in turn (KREG_SPLIT), the gridDim-based
longest-first order (KREG_LONGEST_FIRST: unproven) for comparison, mask compares only on diagonal tiles
(KREG_DIAGONLY), the rescale only on a new max (KREG_SKIPRESCALE), 32-key tiles at 3 blocks an SM (KREG_BN, KREG_MINB).
"""
from __future__ import annotations

import datetime
import sys
import time
from dataclasses import replace

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.numerics import run_numerics
from kreg.registry.catalog import load_catalog
from kreg.registry.expr import parse

CANDIDATES = {
    "registered": (),
    "lf": ("-DKREG_LONGEST_FIRST=1",),
    "end": ("-DKREG_FROM_END=1",),
    "w8": ("-DKREG_WARPS=8",),
    "w8_end": ("-DKREG_WARPS=8", "-DKREG_FROM_END=1"),
    "split": ("-DKREG_SPLIT=1",),
    "split_end": ("-DKREG_SPLIT=1", "-DKREG_FROM_END=1"),
    "w8_split": ("-DKREG_WARPS=8", "-DKREG_SPLIT=1"),
    "w8_split_end": ("-DKREG_WARPS=8", "-DKREG_SPLIT=1", "-DKREG_FROM_END=1"),
    "diag": ("-DKREG_DIAGONLY=1",),
    "skip": ("-DKREG_SKIPRESCALE=1",),
    "diag_skip": ("-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "lf_diag_skip": ("-DKREG_LONGEST_FIRST=1", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "w8_diag_skip": ("-DKREG_WARPS=8", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "w8_lf_diag_skip": ("-DKREG_WARPS=8", "-DKREG_LONGEST_FIRST=1", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "b32m3": ("-DKREG_BN=32", "-DKREG_MINB=3"),
    "b32m3_diag_skip": ("-DKREG_BN=32", "-DKREG_MINB=3", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "lf_b32m3_diag_skip": ("-DKREG_LONGEST_FIRST=1", "-DKREG_BN=32", "-DKREG_MINB=3", "-DKREG_DIAGONLY=1",
                           "-DKREG_SKIPRESCALE=1"),
    "b16m4_diag_skip": ("-DKREG_BN=16", "-DKREG_MINB=4", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "db_diag_skip": ("-DKREG_DB=1", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "lf_db_diag_skip": ("-DKREG_LONGEST_FIRST=1", "-DKREG_DB=1", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "w8_db_diag_skip": ("-DKREG_WARPS=8", "-DKREG_DB=1", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "w8_lf_db_diag_skip": ("-DKREG_WARPS=8", "-DKREG_LONGEST_FIRST=1", "-DKREG_DB=1", "-DKREG_DIAGONLY=1",
                           "-DKREG_SKIPRESCALE=1"),
    "db2_diag_skip": ("-DKREG_DB=2", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
    "lf_db2_diag_skip": ("-DKREG_LONGEST_FIRST=1", "-DKREG_DB=2", "-DKREG_DIAGONLY=1", "-DKREG_SKIPRESCALE=1"),
}
GPU_CASES = ("qwen3-4b-t2048", "qwen3-4b-chunk")      # beside the small ones (T <= 129) in `numerics gpu`
SPEED_SHAPES = {"qwen3-4b-t2048": {"T": 2048, "Hq": 32, "Hkv": 8, "S": 2048, "start": 0},
                "qwen3-4b-t8192": {"T": 8192, "Hq": 32, "Hkv": 8, "S": 8192, "start": 0}}


def candidate(v, name: str, opts: tuple[str, ...]):
    """The variant v built with opts (on top of its own), the grid's row tiles of 16 KREG_WARPS rows."""
    warps = next((int(o.split("=")[1]) for o in opts if o.startswith("-DKREG_WARPS=")), 4)
    bn = next((int(o.split("=")[1]) for o in opts if o.startswith("-DKREG_BN=")), 64)
    shared = 4 * bn * 136 * 2 if any(o.startswith("-DKREG_DB=") for o in opts) else 0        # two K/V buffers [BN][136] each
    ln = replace(v.launches[0], grid=(parse(f"cdiv(T, {16 * warps})"), v.launches[0].grid[1]),
                 block=(parse(str(32 * warps)),), shared=parse(str(shared)))
    return replace(v, options=tuple(v.options) + tuple(opts), launches=(ln,), name=f"{v.name}:{name}")


def candidates(names: list[str], dt: str = "bf16"):
    cat = load_catalog()
    v = cat.find(f"attention_prefill_tc_{dt}_safe").variant
    return cat.ops["attention_prefill"], [candidate(v, n, CANDIDATES[n]) for n in (names or CANDIDATES)]


def ptx_of(v) -> str:
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


def numerics(kind: str, names: list[str]) -> None:
    from kreg.conformance.devices import open_device
    from kreg.pipeline import Options, choose_cases
    dev = open_device(kind)
    for dt in ("bf16", "f16"):
        op, vs = candidates(names, dt)
        for v in vs:
            if kind == "cpu":
                cases = choose_cases(op, v, "cpu", Options())
            else:
                cases = {k: d for k, d in op.cases.items() if d["T"] <= 129 or k in GPU_CASES}
            t0 = time.time()
            num = run_numerics(dev, ptx_of(v), v, op, cases)
            worst = max(((c.outputs.get("out", {}).get("worst") or {}).get("err_over_tol") or 0.0) for c in num.cases) \
                if num.cases else float("nan")
            print(f"{v.name}: {num.status} ({len(num.cases)} cases, worst err/tol {worst:.3f}, "
                  f"{time.time() - t0:.1f} s)", flush=True)
            for f in num.failures()[:3]:
                print(f"  ! {f[:300]}", flush=True)


def prove(names: list[str]) -> None:
    import kreg.checker.prover.prove as P
    op, vs = candidates(names)
    for v in vs:
        P.QUERY_LOG = log = []
        t0 = time.time()
        res = P.prove_variant(v, op, ptx_of(v), timeout_ms=10_000, budget_ms=int(__import__("os").environ.get("KREG_PF_BUDGET_MS", "30000")), isolate=False)
        work = sum(q["rlimit"] / P.RLIMIT_PER_MS[q["kind"]] for q in log) / 1000
        cells = " ".join(f"{p}={res[p].status}" + ("" if res[p].scope == "all-dims" else f"({res[p].scope})")
                         for p in P.PROPS)
        print(f"{v.name}: {cells}  work {work:.1f} s, wall {time.time() - t0:.1f} s", flush=True)


def speed(out_path: str, names: list[str]) -> None:
    import torch
    from kreg.conformance.devices import open_device
    from kreg.conformance.speed import copy_bandwidth, time_case
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from attention_prefill_gpu import sdpa_us
    dev = open_device("gpu")
    op, vs = candidates(names)
    bw = copy_bandwidth(dev)
    mods = {}
    for v in vs:
        try:
            mods[v.name] = dev.load_variant(v, op, ptx_of(v))
        except Exception as e:      # past the register or shared memory limits
            print(f"{v.name}: not loaded: {type(e).__name__}: {str(e)[:200]}", flush=True)
    out = open(out_path, "w")

    def say(s):          # printed and written as it comes (a run cut short keeps its lines)
        print(s, flush=True)
        out.write(s + "\n")
        out.flush()
    say(f"# attention_prefill_tc bf16 candidates: {dev.describe()}  {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}"
        f" UTC  torch {torch.__version__}")
    for case, dims in SPEED_SHAPES.items():
        ref, _ = sdpa_us(torch, dims, torch.bfloat16)
        say(f"{case}  SDPA flash {ref:8.1f} us")
        for v in vs:
            if v.name in mods:
                t = time_case(dev, mods[v.name], v, op, dims, bw)["median_us"]
                say(f"  {v.name.split(':')[1]:16s} {t:8.1f} us  x SDPA {t / ref:5.2f}   {' '.join(v.options)}")
    out.close()


if __name__ == "__main__":
    if sys.argv[1] == "numerics":
        numerics(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "prove":
        prove(sys.argv[2:])
    else:
        speed(sys.argv[2], sys.argv[3:])
