"""The emulator's bit-exactness corpus: how to launch each tests/data/corpus/*.cu kernel, with seeded inputs.
Shared by the tests and bench/emulator_bitexact.py (which records the GPU's outputs for the CPU tests).

An argument is a string: `in NAME DTYPE COUNT INIT` (input buffer), `io NAME DTYPE COUNT INIT` (buffer
initialised and then written), `out NAME DTYPE COUNT` (poisoned with 0xCD bytes), or `DTYPE VALUE` (a
scalar). INIT: normal[:scale], uniform:lo:hi, int:lo:hi, intf:lo:hi (integer-valued floats), bits,
special (finite values mixed with NaN, infinities, signed zeros, subnormals, halfway cases), zero."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}
POISON = 0xCD
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 0.5, 1.5, 2.5, -2.5, 3.4e38, -3.4e38, 65504.0,
           65520.0, 1e10, -1e10, 2 ** 31, -2 ** 31 - 300.0, 4294967296.0, 1.0000001, 7.0, -7.5, 1e-30]


# Approximate instructions: the emulator returns the correctly rounded value; the hardware's own error is
# within 2 ulp for ex2/rsqrt/rcp/sqrt .approx and div.approx/full, but sin/cos/lg2 .approx are specified by
# an absolute error (PTX ISA: about 2^-20.5 to 2^-22.6), and tanh.approx by a relative one (2^-11). An
# approximate output agrees if every element is within 2 ulp or within that absolute (relative) bound.
ABS_BOUND = 2.0 ** -20
HW_BOUND = {("approx_sweep", "tanh"): ("rel", 2.0 ** -11)}


@dataclass
class Case:
    name: str
    grid: tuple
    block: tuple
    args: list
    shared: int = 0
    approx: tuple = ()          # outputs compared within 2 ulp (documented approximate instructions)

    @property
    def source(self) -> Path:
        return HERE / f"{self.name}.cu"


def _c(name, grid, block, args, shared=0, approx=()):
    return Case(name, grid if isinstance(grid, tuple) else (grid,), block if isinstance(block, tuple) else (block,),
                args.split(";"), shared, tuple(approx))


CASES = [
    _c("rmsnorm_bf16", 32, 256, "in x bf16 81920 normal;in w bf16 2560 normal;out y bf16 81920;i32 2560;f32 1e-6",
       approx=["y"]),
    _c("saxpy_grid_stride", 3, 128, "in x f32 1000 normal;in y f32 1000 normal;out o f32 1000;out o2 f32 1000;"
       "i32 1000;f32 1.7"),
    _c("int32_overflow", 4, 256, "in a i32 777 bits;in b i32 777 bits;out o i32 9324;i32 777"),
    _c("divergence_nested", 4, 256, "in a i32 1000 int:0:1000;out o i32 1000;i32 1000"),
    _c("collatz_while", 2, 256, "in a u32 500 bits;out o u32 500;i32 500"),
    _c("warp_reduce_down", 4, 256, "in x f32 1000 normal;out s f32 32;out m i32 32;i32 1000"),
    _c("shfl_up_scan", 2, 128, "in a i32 256 int:-1000:1000;in f f32 256 normal;out o i32 256;out fo f32 256"),
    _c("shfl_idx_width", 2, 64, "in a i32 128 bits;out o i32 640"),
    _c("transpose_shared", (2, 3), (32, 8), "in a f32 3150 normal;out o f32 3150;i32 70;i32 45"),
    _c("block_reduce_tree", 8, 128, "in x f32 1000 normal;out o f32 8;i32 1000"),
    _c("atomics_int", 4, 256, "in a i32 1000 bits;io h i32 16 zero;io s i32 5 int:-5:5;io b u32 4 bits;"
       "io g u64 1 zero;i32 1000"),
    _c("atomics_f32", 2, 160, "in x f32 300 intf:-8:8;io s f32 10 zero;io c i32 1 zero;i32 300"),
    _c("vector_loads", 2, 256, "in a f32 1200 normal;in b i32 600 bits;in c bf16 2400 normal;out oa f32 1200;"
       "out ob i32 600;out oc bf16 2400;i32 300"),
    _c("f16_math", 2, 256, "in a f16 500 normal:4;in b f16 500 normal:4;in c f16 500 normal:4;out o f16 5000;i32 500"),
    _c("bf16_math", 2, 256, "in a bf16 500 normal:4;in b bf16 500 normal:4;in f f32 500 normal:10;"
       "out o bf16 5000;i32 500"),
    _c("conversions", 2, 256, "in f f32 500 special;in d f64 500 special;in l i64 500 bits;out oi i32 5000;"
       "out of f32 5000;out oh u16 2000;i32 500"),
    _c("approx_math", 2, 256, "in x f32 500 uniform:-10:10;out o f32 3500;i32 500", approx=["o"]),
    _c("precise_math", 2, 256, "in x f32 500 normal:10;in y f32 500 normal:10;out o f32 6000;i32 500"),
    _c("bit_ops", 2, 256, "in a u32 500 bits;in b u32 500 bits;out o u32 6000;i32 500"),
    _c("vote_ballot", 4, 256, "in a i32 1000 int:-2000:2000;out o u32 1000;i32 1000"),
    _c("f64_math", 2, 256, "in x f64 500 normal;in y f64 500 normal;out o f64 3000;i32 500"),
    _c("minmax_special", 1, 256, "in x f32 256 special;in y f32 256 special;out o f32 1536;out fl i32 256;i32 256"),
    _c("dynamic_shared_3d", (2, 3, 2), (4, 4, 2), "in a i32 384 bits;out o i32 384", shared=256),
    _c("softmax_row", 16, 128, "in x f32 4800 normal:3;out y f32 4800;i32 300", approx=["y"]),
    _c("matmul_tiled", (2, 3), (16, 16), "in a f32 1665 normal;in b f32 1305 normal;out c f32 1073;i32 37;i32 29;"
       "i32 45"),
    _c("local_array", 1, 256, "in a i32 1600 int:-100:100;out o i32 1800;i32 200"),
    _c("compare_select", 2, 256, "in a i64 300 bits;in b i64 300 bits;out o i64 2400;i32 300"),
    _c("partial_block", 5, 48, "in a i32 230 int:-100:100;out o i32 230;i32 230"),
    _c("warp_intrinsics", 2, 64, "in a i32 128 int:-2000000000:2000000000;in b u32 128 bits;out o i32 1280;i32 128"),
    _c("async_copy_atomics", 3, 128, "in x f32 300 intf:-50:50;out o f32 384;io d f64 1 zero;io h f16 2 zero;"
       "io bs bf16 2 zero;io c u64 1 zero;i32 300"),
    _c("libm_exact", 2, 256, "in x f32 500 normal:30;in y f32 500 normal:5;out o f32 4500;i32 500",
       approx=["o"]),     # cbrtf and erff use ex2/lg2/rcp .approx inside; the other seven columns are exact
    _c("libm_approx", 2, 256, "in x f32 500 normal:4;out o f32 3500;i32 500", approx=["o"]),
    _c("approx_sweep", 64, 256, "in a f32 16384 uniform:-20:20;in b f32 16384 uniform:0.001:1000;"
       + ";".join(f"out {k} f32 16384" for k in ("ex2", "ex2ftz", "lg2", "sin", "cos", "rsq", "rcp", "tanh", "sqrt", "div"))
       + ";i32 16384", approx=["ex2", "ex2ftz", "lg2", "sin", "cos", "rsq", "rcp", "tanh", "sqrt", "div"]),
    _c("mixed_width_ld", 2, 256, "in a u8 500 bits;in b i16 500 bits;out o i32 2000;out by u8 500;i32 500"),
]


@dataclass
class Buffer:
    role: str        # in | io | out
    name: str
    dtype: str
    count: int
    init: str | None

    @property
    def nbytes(self) -> int:
        return self.count * np.dtype(NP[self.dtype]).itemsize


def parse_arg(spec: str):
    parts = spec.split()
    if parts[0] in ("in", "io", "out"):
        return Buffer(parts[0], parts[1], parts[2], int(parts[3]), parts[4] if len(parts) > 4 else None)
    dtype, value = parts
    return np.dtype(NP[dtype]).type(float(value) if dtype.startswith("f") else int(value))


def _bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32)
    r = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, np.float32)), np.uint16(0x7FFF), r)


def _floats(init: str, n: int, rng) -> np.ndarray:
    kind, *p = init.split(":")
    if kind == "normal":
        return rng.standard_normal(n) * (float(p[0]) if p else 1.0)
    if kind == "uniform":
        return rng.uniform(float(p[0]), float(p[1]), n)
    if kind == "intf":
        return rng.integers(int(p[0]), int(p[1]), n).astype(np.float64)
    if kind == "special":
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 6, n)
        pick = rng.random(n) < 0.5
        return np.where(pick, np.array(SPECIAL)[rng.integers(0, len(SPECIAL), n)], v)
    if kind == "zero":
        return np.zeros(n)
    raise ValueError(f"unknown init {init!r}")


def make_buffer(case: Case, buf: Buffer) -> np.ndarray:
    """The initial bytes of a buffer: seeded by the case and buffer name, identical on every machine."""
    seed = int.from_bytes(hashlib.sha256(f"{case.name}/{buf.name}".encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    dt = np.dtype(NP[buf.dtype])
    if buf.role == "out":
        return np.full(buf.nbytes, POISON, np.uint8)
    kind = buf.init.split(":")[0]
    if kind == "bits":
        return rng.integers(0, 256, buf.nbytes, dtype=np.uint8)
    if kind == "int":
        lo, hi = (int(x) for x in buf.init.split(":")[1:])
        return rng.integers(lo, hi, buf.count).astype(dt).view(np.uint8)
    vals = _floats(buf.init, buf.count, rng)
    if buf.dtype == "bf16":
        return _bf16(vals.astype(np.float32)).view(np.uint8)
    if buf.dtype in ("f32", "f64", "f16"):
        with np.errstate(over="ignore"):
            return vals.astype(dt).view(np.uint8)
    return vals.astype(dt).view(np.uint8)


def ulp_distance(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """Distance in units in the last place between float bit patterns (0 where both are NaN)."""
    bits = {"f32": (np.int32, 32), "f64": (np.int64, 64), "f16": (np.int16, 16), "bf16": (np.int16, 16)}[dtype]
    it, nb = bits
    x, y = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    lim = 1 << (nb - 1)
    x = np.where(x < 0, -(x + lim), x)       # sign-magnitude -> monotonic integers
    y = np.where(y < 0, -(y + lim), y)
    fa = a.view({"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16}[dtype])
    fb = b.view({"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16}[dtype])
    if dtype == "bf16":
        na = (a.view(np.uint16) & 0x7FFF) > 0x7F80
        nb_ = (b.view(np.uint16) & 0x7FFF) > 0x7F80
    else:
        na, nb_ = np.isnan(fa), np.isnan(fb)
    d = np.abs(x - y)
    return np.where(na & nb_, 0, np.where(na | nb_, 1 << 40, d))


def compare(case: Case, buf: Buffer, got: bytes, want: bytes) -> tuple[bool, str]:
    """Bit-identical, or for the case's approximate outputs within 2 ulp."""
    g, w = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
    if g.tobytes() == w.tobytes():
        return True, "identical"
    dt = np.dtype(NP[buf.dtype])
    gv, wv = g.view(dt), w.view(dt)
    diff = np.flatnonzero(g.view(dt.str.replace("f", "u").replace("i", "u") if dt.kind != "u" else dt) !=
                          w.view(dt.str.replace("f", "u").replace("i", "u") if dt.kind != "u" else dt))
    if buf.name in case.approx and buf.dtype in ("f32", "f64", "f16", "bf16"):
        d = ulp_distance(gv, wv, buf.dtype)
        text = (f"max {int(d.max())} ulp; of {buf.count}: {int((d == 1).sum())} at 1 ulp, "
                f"{int((d == 2).sum())} at 2, {int((d > 2).sum())} beyond")
        kind, limit = HW_BOUND.get((case.name, buf.name), ("abs", ABS_BOUND))
        with np.errstate(invalid="ignore", over="ignore"):
            x, y = gv.astype(np.float64), wv.astype(np.float64)
            err = np.abs(x - y) if kind == "abs" else np.abs(x - y) / np.maximum(np.abs(y), 1e-30)
        ok = (d <= 2) | (err <= limit)
        if (d > 2).any():
            text += f"; beyond 2 ulp: max {kind} error {float(np.nanmax(np.where(d > 2, err, 0))):.3g} (bound {limit:.3g})"
        return bool(ok.all()), text
    i = int(diff[0])
    ulps = ""
    if buf.dtype in ("f32", "f64", "f16", "bf16"):
        ulps = f"; max {int(ulp_distance(gv, wv, buf.dtype).max())} ulp"
    return False, (f"{len(diff)} of {buf.count} elements differ{ulps}; first at [{i}]: emulator {gv[i]!r} "
                   f"(bits {g.view(dt.str.replace('f', 'u').replace('i', 'u'))[i]:#x}) vs gpu {wv[i]!r} "
                   f"(bits {w.view(dt.str.replace('f', 'u').replace('i', 'u'))[i]:#x})")


def initial(case: Case) -> tuple[list, list]:
    """(buffers with their initial bytes, kernel args with None in place of each buffer's address)."""
    bufs, args = [], []
    for spec in case.args:
        a = parse_arg(spec)
        if isinstance(a, Buffer):
            bufs.append((a, make_buffer(case, a)))
            args.append(None)
        else:
            args.append(a)
    return bufs, args


def run_emulated(case: Case, ptx: str, **kw) -> dict[str, bytes]:
    """Every buffer's bytes after the launch on the CPU emulator."""
    from kreg.checker.emulator import machine as E
    mem = E.Memory()
    bufs, args = initial(case)
    addrs = []
    for b, data in bufs:
        addrs.append(mem.alloc(b.nbytes, b.name))
        mem.write(addrs[-1], data)
    it = iter(addrs)
    full = [np.uint64(next(it)) if a is None else a for a in args]
    E.launch(ptx, case.name, case.grid, case.block, case.shared, full, mem, **kw)
    return {b.name: mem.read(addr, b.nbytes) for (b, _), addr in zip(bufs, addrs)}


@lru_cache(maxsize=None)
def emulated(name: str) -> dict[str, bytes]:
    """run_emulated on the case's freshly compiled PTX, once per process (tests share it)."""
    from kreg.checker.ptx.compile import compile_cuda
    case = next(c for c in CASES if c.name == name)
    return run_emulated(case, compile_cuda(case.source.read_text()).ptx)


def run_gpu(case: Case, ptx: str) -> dict[str, bytes]:
    """Every buffer's bytes after the launch on the GPU (CuPy, the exact PTX)."""
    import cupy
    from kreg.checker.ptx.bind import BoundLaunch
    from kreg.runtime.gpu import GpuModule
    bufs, args = initial(case)
    dev = [cupy.asarray(data) for _, data in bufs]
    it = iter(dev)
    full = tuple(np.uint64(next(it).data.ptr) if a is None else a for a in args)
    g, b = tuple(case.grid) + (1,) * (3 - len(case.grid)), tuple(case.block) + (1,) * (3 - len(case.block))
    GpuModule(ptx).launch(BoundLaunch(case.name, g, b, case.shared, full))
    cupy.cuda.runtime.deviceSynchronize()
    return {bb.name: cupy.asnumpy(d).tobytes() for (bb, _), d in zip(bufs, dev)}


def compare_with_gpu(case: Case, ptx: str) -> tuple[dict, dict]:
    """The case on the GPU and on the emulator: a record of every buffer compared, and the GPU's outputs."""
    gpu = run_gpu(case, ptx)
    t = time.perf_counter()
    emu = run_emulated(case, ptx)
    emu_s = time.perf_counter() - t
    buffers = []
    for spec in case.args:
        b = parse_arg(spec)
        if isinstance(b, Buffer):
            good, detail = compare(case, b, emu[b.name], gpu[b.name])
            buffers.append({"buffer": b.name, "dtype": b.dtype, "ok": good, "detail": detail,
                            "approx": b.name in case.approx})
    return {"case": case.name, "ok": all(x["ok"] for x in buffers), "buffers": buffers,
            "ptx_sha256": hashlib.sha256(ptx.encode()).hexdigest(), "emulator_s": round(emu_s, 3)}, gpu
