"""The wgmma layout probes on the GPU and on the emulator: raw fp32 accumulators per (thread, register) of
one warpgroup's probe entry (wgmma_probe_<dt> of the unsafe gemm_wgmma, m64n64 chained over K;
attention_prefill_wg_probe_<dt> of the safe wgmma prefill, m64n128), from bf16 / f16 operand bits."""
from __future__ import annotations

import numpy as np

from kreg.checker.ptx.bind import BoundLaunch


def bits_of(a: np.ndarray, dt: str) -> np.ndarray:
    """float32 -> bf16 (round to nearest even; no NaNs here) or f16 bit patterns."""
    if dt == "bf16":
        u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.ascontiguousarray(a, np.float32).astype(np.float16).view(np.uint16)


def value_of(bits: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.view(np.float16).astype(np.float64)


def on_gpu(gmod, entry: str, a: np.ndarray, b: np.ndarray, shared: int, regs: int, *scalars) -> np.ndarray:
    """Raw accumulators [128 threads][regs] of `entry`(a, b, d, *scalars) on one block of 128 threads."""
    import cupy
    a, b = cupy.asarray(a), cupy.asarray(b)
    d = cupy.zeros(128 * regs, dtype=cupy.float32)
    gmod.launch(BoundLaunch(entry, (1, 1, 1), (128, 1, 1), shared,
                            (np.uint64(a.data.ptr), np.uint64(b.data.ptr), np.uint64(d.data.ptr), *scalars)))
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(d).reshape(128, regs)


def on_emulator(emod, entry: str, a: np.ndarray, b: np.ndarray, shared: int, regs: int, *scalars) -> np.ndarray:
    """The same launch in kreg's PTX emulator."""
    from kreg.checker.emulator.machine import Memory, launch
    mem = Memory()
    pa, pb, pd = mem.alloc(a.nbytes), mem.alloc(b.nbytes), mem.alloc(128 * regs * 4)
    mem.write(pa, a)
    mem.write(pb, b)
    launch(emod, entry, 1, 128, shared, [np.uint64(pa), np.uint64(pb), np.uint64(pd), *scalars], mem)
    return np.frombuffer(mem.read(pd, 128 * regs * 4), np.float32).reshape(128, regs)


def gemm_probe(run, module, dt: str, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Raw accumulators [128][32] of wgmma_probe_<dt> on A [64][K], B [64][K] (float32, rounded to dt);
    `run` is on_gpu or on_emulator."""
    K = A.shape[1]
    return run(module, f"wgmma_probe_{dt}", bits_of(A, dt), bits_of(B, dt), 16384 * (K // 64) + 1024, 32, np.int32(K))


def prefill_probe(run, module, dt: str, a: np.ndarray, b: np.ndarray, bn: int) -> np.ndarray:
    """Raw accumulators [128][64] of attention_prefill_wg_probe_<dt> on operand bits a [64][bn], b [bn][128]."""
    return run(module, f"attention_prefill_wg_probe_{dt}", a, b, 4 * bn * 128 + 1024, 64)


def prefill_tile(raw: np.ndarray) -> np.ndarray:
    """Raw accumulators [128 threads][64 registers] -> the m64n128 tile (the assumed wgmma D layout)."""
    t = np.arange(128)[:, None]
    i = np.arange(64)[None, :]
    w, lane, j, h = t // 32, t % 32, i // 4, i % 4
    tile = np.zeros((64, 128))
    tile[16 * w + lane // 4 + 8 * (h // 2), 8 * j + 2 * (lane % 4) + h % 2] = raw
    return tile
