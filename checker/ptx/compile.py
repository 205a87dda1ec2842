"""CUDA C++ -> PTX for sm_90 through NVRTC (pinned to 13.0 so every machine emits the same bytes),
cached on disk by content hash; and the check that a driver can load that PTX."""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kreg.registry.limits import COMPILE_LOG_MAX_CHARS

from kreg.checker.ptx.cache import PtxCache, by_digest, remember
from kreg.checker.ptx.digest import ptx_digest
from kreg.registry.catalog import include_bytes
from kreg.registry.source_policy import source_problem

ARCH = "compute_90"
NVRTC_VERSION = (13, 0)   # the version pinned in pyproject.toml
INCLUDE_DIR = Path(__file__).resolve().parents[2] / "kernels" / "include"
# PTX ISA version each CUDA driver major.minor accepts at most (PTX ISA release notes).
DRIVER_MAX_PTX = {(12, 0): (8, 0), (12, 1): (8, 1), (12, 2): (8, 2), (12, 3): (8, 3), (12, 4): (8, 4),
                  (12, 5): (8, 5), (12, 6): (8, 5), (12, 8): (8, 7), (12, 9): (8, 8), (13, 0): (9, 0),
                  (13, 1): (9, 1), (13, 2): (9, 2)}


class CompileError(RuntimeError):
    def __init__(self, name: str, log: str):
        self.log = log
        shown = log.strip()
        if len(shown) > COMPILE_LOG_MAX_CHARS:      # a hostile source can make the log as long as it likes
            shown = shown[:COMPILE_LOG_MAX_CHARS] + f"\n... ({len(shown) - COMPILE_LOG_MAX_CHARS} more characters)"
        super().__init__(f"NVRTC failed to compile {name}:\n{shown}")


class SourceRefused(CompileError):
    """The source breaks kreg's source policy (registry/source_policy.py); NVRTC never saw it."""

    def __init__(self, name: str, why: str):
        self.log = why
        RuntimeError.__init__(self, f"refused to compile {name}: {why}")


class DriverTooOld(RuntimeError):
    pass


@dataclass(frozen=True)
class Compiled:
    ptx: str
    sha256: str          # of the PTX bytes: what a proof names and what a GPU must load
    log: str
    cached: bool


def _home() -> Path:
    return Path(os.environ.get("KREG_HOME", Path.home() / ".kreg"))


def cache_dir() -> Path:
    """The PTX cache folder ($KREG_HOME/cache/ptx)."""
    return _home() / "cache" / "ptx"


def cached_ptx(sha256: str) -> str | None:
    """The PTX of that sha256 from the content-addressed cache, its bytes checked; None on a miss."""
    return by_digest(cache_dir(), sha256)


@cache
def _nvrtc():
    from cuda.bindings import nvrtc
    err, major, minor = nvrtc.nvrtcVersion()
    if (major, minor) != NVRTC_VERSION:
        raise CompileError("(setup)", f"NVRTC {major}.{minor} found, but kreg pins NVRTC "
                           f"{NVRTC_VERSION[0]}.{NVRTC_VERSION[1]} (nvidia-cuda-nvrtc==13.0.88): other "
                           "versions emit other PTX bytes, and newer PTX ISAs fail on CUDA 13.0 drivers")
    return nvrtc


@cache
def cuda_include_dir() -> str:
    """cuda_fp16.h / cuda_bf16.h from the nvidia-cuda-runtime wheel (never /usr/local/cuda)."""
    import cuda.pathfinder as pf
    found = pf.find_nvidia_header_directory("cudart")
    if not found:
        raise CompileError("(setup)", "CUDA headers not found: install nvidia-cuda-runtime==13.0.* "
                           "(it ships cuda_fp16.h and cuda_bf16.h under nvidia/cu13/include)")
    return str(found)


def nvrtc_options(options=()) -> list[str]:
    return [f"--gpu-architecture={ARCH}", "--std=c++17", f"-I{cuda_include_dir()}", f"-I{INCLUDE_DIR}",
            *options]


def _check(err, what):
    if int(err) != 0:
        raise CompileError(what, f"NVRTC call failed: {err}")


def compile_cuda(source: str, name: str = "kernel.cu", options=(), use_cache: bool = True) -> Compiled:
    """Compile CUDA C++ source text to PTX. Raises SourceRefused if the source breaks the source policy
    (size, includes), CompileError with NVRTC's log on failure. A cached PTX is used only if it still
    has the sha256 recorded beside it; a cache that cannot be written is skipped, never an error."""
    why = source_problem(source)
    if why:
        raise SourceRefused(name, why)
    nvrtc = _nvrtc()
    opts = nvrtc_options(options)
    entry = PtxCache(cache_dir(), _key(source, options))
    if use_cache:
        ptx = entry.get()
        if ptx is not None:
            sha = ptx_digest(ptx)
            remember(cache_dir(), ptx, sha)
            return Compiled(ptx, sha, "", True)
    buf, _, log = _nvrtc_run(nvrtc, source, name, opts, cubin=False)
    ptx = bytes(buf).rstrip(b"\0").decode()
    sha = ptx_digest(ptx)
    if use_cache:
        entry.put(ptx)
        remember(cache_dir(), ptx, sha)
    return Compiled(ptx, sha, log, False)


def _nvrtc_run(nvrtc, source: str, name: str, opts: list[str], cubin: bool):
    """(PTX bytes, CUBIN bytes or None, log) of one NVRTC compile; CompileError with the log on failure."""
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(err, name)
    try:
        bopts = [o.encode() for o in opts]
        (cerr,) = nvrtc.nvrtcCompileProgram(prog, len(bopts), bopts)
        err, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(n)         # NVRTC writes into it: never a bytes object (b" " * 1 is Python's shared b" ")
        nvrtc.nvrtcGetProgramLog(prog, log)
        log = bytes(log).rstrip(b"\0 ").decode(errors="replace")
        if int(cerr) != 0:
            raise CompileError(name, log or str(cerr))
        if cubin:
            err, n = nvrtc.nvrtcGetCUBINSize(prog)
            _check(err, name)
            code = bytearray(n)
            (err,) = nvrtc.nvrtcGetCUBIN(prog, code)
            _check(err, name)
        err, n = nvrtc.nvrtcGetPTXSize(prog)
        _check(err, name)
        buf = bytearray(n)
        (err,) = nvrtc.nvrtcGetPTX(prog, buf)
        _check(err, name)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf, bytes(code) if cubin else None, log


def _key(source: str, options) -> str:
    """A compile's cache key: its source, the headers it includes, its options and the compiler."""
    return hashlib.sha256(b"\0".join([source.encode(), include_bytes(source), *(o.encode() for o in options),
                                      repr(NVRTC_VERSION).encode(), ARCH.encode()])).hexdigest()


def assemble_cuda(source: str, name: str = "kernel.cu", options=(), use_cache: bool = True) -> tuple[str, bytes]:
    """The PTX and the sm_90 cubin that NVRTC's own assembler (ptxas 13.0) makes of it, in one compile
    (the PTX is the same bytes compile_cuda gives: only the last stage differs); both cached under the
    compile's key, as compile_cuda caches its PTX."""
    why = source_problem(source)
    if why:
        raise SourceRefused(name, why)
    nvrtc = _nvrtc()
    key = _key(source, options)
    ptx_entry, cubin_entry = PtxCache(cache_dir(), key + "-sm_90"), PtxCache(cache_dir(), key + "-sm_90", ".cubin")
    if use_cache:
        ptx, code = ptx_entry.get(), cubin_entry.get_bytes()
        if ptx is not None and code is not None:
            return ptx, code
    opts = [o.replace(f"={ARCH}", "=sm_90") for o in nvrtc_options(options)]
    buf, code, _ = _nvrtc_run(nvrtc, source, name, opts, cubin=True)
    ptx = bytes(buf).rstrip(b"\0").decode()
    if use_cache:
        cubin_entry.put(code)
        ptx_entry.put(ptx)
    return ptx, code


def ptx_isa_version(ptx: str) -> tuple[int, int]:
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.M)
    if not m:
        raise ValueError("PTX has no .version directive")
    return int(m[1]), int(m[2])


def check_driver_accepts(ptx: str, driver_version: int) -> None:
    """driver_version as cuDriverGetVersion gives it (13000 for CUDA 13.0). Raises DriverTooOld."""
    drv = (driver_version // 1000, driver_version % 1000 // 10)
    isa = ptx_isa_version(ptx)
    known = [v for v in DRIVER_MAX_PTX if v <= drv]
    if not known:
        raise DriverTooOld(f"CUDA driver {drv[0]}.{drv[1]} is older than any kreg supports (needs 13.0+)")
    limit = DRIVER_MAX_PTX[max(known)]
    if isa > limit:
        raise DriverTooOld(f"this PTX is ISA {isa[0]}.{isa[1]} but the CUDA {drv[0]}.{drv[1]} driver accepts "
                           f"ISA <= {limit[0]}.{limit[1]}: update the driver, or compile with NVRTC "
                           f"{drv[0]}.{drv[1]} (kreg pins NVRTC 13.0, ISA 9.0)")
