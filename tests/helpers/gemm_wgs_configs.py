"""Other configurations of the safe wgmma GEMM (kernels/safe/gemm/gemm_wgmma_safe.cu) as variants: its
block tile, the register-staged or cp.async stage structure, the stage count (the -D knobs of its source)."""
from __future__ import annotations

from dataclasses import replace

from kreg.registry.expr import parse

_KNOBS = ("-DKREG_BN", "-DKREG_MINB", "-DKREG_ASYNC", "-DKREG_STAGES", "-DKREG_DEEP", "-DKREG_PIPE", "-DKREG_TRI",
          "-DKREG_RS", "-DKREG_MMA_FIRST")


def _with(v, opts, bn, shared, name):
    ln = replace(v.launches[0], grid=(parse("cdiv(T, 128)"), parse(f"cdiv(N, {bn})")), shared=parse(str(shared)))
    return replace(v, options=opts, launches=(ln,) + tuple(v.launches[1:]), name=name)


def staged_config(v, bn: int, minb: int = 1, stages: int = 0):
    """gemm_wgs at block tile 128 x bn, at least minb blocks an SM (__launch_bounds__): two register-staged
    stages (stages -1: KREG_DEEP, loads two steps ahead; -3: three stages), or (stages > 0) KREG_ASYNC with
    that many cp.async stages, each (128 + bn) 128 bytes, + 1 KiB; the ragged launch unchanged."""
    opts = tuple(o for o in v.options if not o.startswith(_KNOBS)) + (f"-DKREG_BN={bn}", f"-DKREG_MINB={minb}")
    if stages == -1:
        opts += ("-DKREG_DEEP=1",)
    elif stages == -3:
        opts += ("-DKREG_DEEP=0", "-DKREG_TRI=1")
    elif stages:
        opts += ("-DKREG_ASYNC=1", f"-DKREG_STAGES={stages}")
    shared = (3 if stages == -3 else max(stages, 2)) * (128 + bn) * 128 + 1024
    return _with(v, opts, bn, shared, f"wgs_bn{bn}_b{minb}" + {-1: "_deep", -3: "_tri", 0: ""}.get(stages, f"_cp{stages}"))


def pipeline_config(v, name: str, bn: int, kind: str, stages: int, *extra):
    """gemm_wgs as the registered cp.async pipeline (kind "pipe": KREG_PIPE, wgmma.wait_group 1 every step)
    or with A from registers (kind "rs") at block tile 128 x bn and that many stages, plus extra -D options."""
    opts = tuple(o for o in v.options if not o.startswith(_KNOBS)) + (f"-DKREG_BN={bn}",)
    opts += ("-DKREG_PIPE=1", f"-DKREG_STAGES={stages}") if kind == "pipe" else ("-DKREG_DEEP=0", "-DKREG_RS=1")
    return _with(v, opts + extra, bn, stages * (128 + bn) * 128 + 1024, name)
