"""Hopper warpgroup MMA (checker/emulator/wgmma.py, kernels/unsafe/gemm/gemm_wgmma.cu) on the CPU: the probe
kernel's raw accumulators against the PTX ISA's m64nNk16 fragment layout written out here (warp w of the
warpgroup owns rows 16 w .. 16 w + 15; lane l holds d[4 j + h] at row 16 w + l / 4 + 8 (h / 2), column
8 j + 2 (l % 4) + h % 2) on operands that code their rows, columns and k; the asynchrony (accumulators
undefined until wait_group, shared operands read as late as then) catching broken kernels; and the
prover never proving the unsafe kernel race-free (tests/data/prover_corpus has the wgmma kernels it proves and
refutes)."""

import numpy as np
import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.emulator.machine import Memory, launch
from kreg.registry.catalog import load_catalog
from kreg.runtime import parsed

from helpers.paths import ROOT
from helpers.recorded import prove_recorded

CAT = load_catalog()
SRC = CAT.find("gemm_wgmma_bf16").variant.source_path


def _bf16(a):
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _probe(A, B):
    """Raw accumulators [128 threads][32] of wgmma_probe_bf16 (one m64n64 tile over K) on the emulator."""
    module = parsed(compile_cuda(SRC.read_text(), SRC.name, ("--gpu-architecture=compute_90a",)).ptx)
    K = A.shape[1]
    mem = Memory()
    pa, pb, pd = mem.alloc(2 * A.size), mem.alloc(2 * B.size), mem.alloc(128 * 32 * 4)
    mem.write(pa, _bf16(A))
    mem.write(pb, _bf16(B))
    launch(module, "wgmma_probe_bf16", 1, 128, 16384 * (K // 64) + 1024,
           [np.uint64(pa), np.uint64(pb), np.uint64(pd), np.int32(K)], mem)
    return np.frombuffer(mem.read(pd, 128 * 32 * 4), np.float32).reshape(128, 32)


def _isa_tile(raw):
    D = np.full((64, 64), np.nan)
    for t in range(128):
        w, lane = divmod(t, 32)
        for i in range(32):
            j, h = divmod(i, 4)
            D[16 * w + lane // 4 + 8 * (h // 2), 8 * j + 2 * (lane % 4) + h % 2] = raw[t, i]
    return D


M = np.arange(64.0)
EYE = np.eye(64, dtype=np.float32)


@pytest.mark.parametrize("A,B,want", [
    (EYE, np.repeat(M[:, None] + 1, 64, 1), lambda m, n: n + 1),     # B's rows land in D's columns
    (EYE, np.repeat(M[None, :] + 1, 64, 0), lambda m, n: m + 1),     # B's k order (A picks k = m)
    (np.repeat(M[:, None] + 1, 64, 1), EYE, lambda m, n: m + 1),     # A's rows land in D's rows
    (np.repeat(M[None, :] + 1, 64, 0), EYE, lambda m, n: n + 1),     # A's k order
], ids=["B-rows", "B-k", "A-rows", "A-k"])
def test_probe_follows_the_isa_fragment_and_swizzle_layout(A, B, want):
    D = _isa_tile(_probe(A.astype(np.float32), B.astype(np.float32)))
    m, n = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    assert np.array_equal(D, want(m, n))


def test_probe_random_integers_over_four_k_tiles_exact():
    rng = np.random.default_rng(5)
    A, B = (rng.integers(-3, 4, (64, 256)).astype(np.float32) for _ in range(2))
    assert np.array_equal(_isa_tile(_probe(A, B)), A.astype(np.float64) @ B.T)


def _run_gemm(src: str, T: int, N: int, K: int, seed: int = 0, ws: int = 0, persist_grid: int = 0):
    """gemm_wgmma_bf16 at 128 x 64 tiles, 3 stages (every stage refilled several times), with (ws = 1) or
    without a producer warpgroup, or persistent on persist_grid blocks, on random integers in [-2, 2] on
    the emulator: (Y, the exact product rounded once to bf16), both as float32."""
    opts = ("--gpu-architecture=compute_90a", "-DKREG_BN=64", "-DKREG_STAGES=3", f"-DKREG_WS={int(ws or persist_grid > 0)}",
            f"-DKREG_PERSIST={int(persist_grid > 0)}")
    module = parsed(compile_cuda(src, "gemm_wgmma.cu", opts).ptx)
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, (T, K)).astype(np.float32)
    W = rng.integers(-2, 3, (N, K)).astype(np.float32)
    mem = Memory()
    px, pw, py = mem.alloc(2 * X.size), mem.alloc(2 * W.size), mem.alloc(2 * T * N)
    mem.write(px, _bf16(X))
    mem.write(pw, _bf16(W))
    mem.write(py, np.full(T * N, 0x7FC0, np.uint16))
    grid = persist_grid or (-(-T // 128), -(-N // 64))
    launch(module, "gemm_wgmma_bf16", grid, 384 if ws or persist_grid else 256, 3 * (128 + 64) * 128 + 1024,
           [np.uint64(px), np.uint64(pw), np.uint64(py), np.int32(T), np.int32(N), np.int32(K)], mem)
    Y = (np.frombuffer(mem.read(py, 2 * T * N), np.uint16).astype(np.uint32) << 16).view(np.float32)
    want = (_bf16((X.astype(np.float64) @ W.T).astype(np.float32)).astype(np.uint32) << 16).view(np.float32)
    return Y.reshape(T, N), want


@pytest.mark.parametrize("ws", [0, 1])
@pytest.mark.parametrize("K", [64, 192, 448, 520])
def test_gemm_wgmma_exact_on_integers_through_many_k_tiles(K, ws):
    Y, want = _run_gemm(SRC.read_text(), 130, 70, K, ws=ws)    # up to 9 k tiles through 3 stages, ragged T, N
    assert np.array_equal(Y, want)


@pytest.mark.parametrize("grid", [1, 2, 5])
@pytest.mark.parametrize("T,N,K", [(130, 70, 448), (300, 131, 192), (17, 9, 8)])
def test_persistent_gemm_wgmma_exact_over_several_tiles_a_block(T, N, K, grid):
    """Blocks walking several tiles (their k steps on one stage counter), more blocks than tiles, odd N."""
    Y, want = _run_gemm(SRC.read_text(), T, N, K, persist_grid=grid)
    assert np.array_equal(Y, want)


@pytest.mark.parametrize("old,new,why", [
    ('asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");', "",
     "stages refilled while the wgmmas reading them are in flight"),
    ('asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");\n    asm volatile("cp.async',
     'asm volatile("cp.async', "accumulators read before the last group retires"),
    ("(s + STAGES - 2) % STAGES) * STAGE_BYTES, X, W", "(s + STAGES - 1) % STAGES) * STAGE_BYTES, X, W",
     "tiles copied into the stage of the wgmma in flight instead of their own"),
])
def test_broken_asynchrony_is_caught(old, new, why):
    src = SRC.read_text()
    assert old in src
    Y, want = _run_gemm(src.replace(old, new), 130, 70, 448)
    assert not np.array_equal(Y, want), why


@pytest.mark.parametrize("old,new,why", [
    ('            if (i >= LAG) {\n                asm volatile("cp.async.wait_group %0;" :: "n"(LAG) : "memory");',
     "            if (i >= LAG) {", "a stage marked full before its copies landed"),
    ("if (s >= 1 && s - 1 + STAGES < steps) named_arrive(EMPTY + (s - 1) % STAGES, THREADS);",
     "if (s + STAGES < steps) named_arrive(EMPTY + s % STAGES, THREADS);", "a stage freed while its wgmmas are in flight"),
])
def test_broken_producer_hand_over_is_caught(old, new, why):
    src = SRC.read_text()
    assert old in src
    Y, want = _run_gemm(src.replace(old, new), 130, 70, 448, ws=1)
    assert not np.array_equal(Y, want), why


def test_prover_never_proves_the_unsafe_wgmma_kernel_race_free():
    """Its mainloop leaves step s's wgmmas pending into step s + 1 (wait_group 1) while the stage of step
    s - 2 is refilled through a rotating stage index (the safe gemm_wgs pipeline uses static stages instead):
    race freedom is never proven, for the kernel nor for one that refills a stage in flight (a real race)."""
    v = CAT.find("gemm_wgmma_bf16").variant
    src = v.source_path.read_text()
    broken = src.replace('asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");', "")
    for text in (src, broken):
        ptx = compile_cuda(text, v.source_path.name, v.options).ptx
        res = prove_recorded(v, CAT.ops["gemm"], ptx, timeout_ms=2000, budget_ms=6000).verdicts
        assert res["race_free"].status != "proven" and res["race_free"].reason


def test_wgmma_variant_is_unsafe_and_targets_sm90a():
    for dt in ("bf16", "f16"):
        v = CAT.find(f"gemm_wgmma_{dt}").variant
        assert v.safety == "unsafe" and "--gpu-architecture=compute_90a" in v.options
        assert ".target sm_90a" in compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


H100_PROBE = ROOT / "bench" / "results" / "wgmma_probe_h100.txt"


@pytest.mark.skipif(not H100_PROBE.exists(), reason="no H100 probe output recorded")
def test_emulator_against_the_h100_probe():
    """The H100's raw accumulators of wgmma_probe_bf16 on random normals (K = 256: 16 chained k16 steps;
    recorded by the retired bench/wgmma_dev.py probe; the launch is tests/helpers/wgmma_probes.py) against
    the emulator's: every register within the documented tensor-core bound (gemm.yaml: 3 K u of sum |a b|;
    so the layouts agree), and at least 99% bit-identical under the fitted k16-step model (checker/emulator/wgmma.py), where a single rounding of the exact sum matches < 20%."""
    rng = np.random.default_rng(5)
    for _ in range(2):
        rng.integers(-3, 4, (64, 256))
    A = rng.standard_normal((64, 256)).astype(np.float32)
    B = rng.standard_normal((64, 256)).astype(np.float32)
    lines = [ln for ln in H100_PROBE.read_text().splitlines() if not ln.startswith("#")]
    gpu = np.array([[int(x, 16) for x in ln.split()] for ln in lines], np.uint32).view(np.float32)
    emu = _probe(A, B)
    Ab, Bb = ((_bf16(x).astype(np.uint32) << 16).view(np.float32).astype(np.float64) for x in (A, B))
    S = _isa_tile(np.ones((128, 32))) * (np.abs(Ab) @ np.abs(Bb).T)
    err = np.abs(_isa_tile(gpu) - _isa_tile(emu)) / S
    assert err.max() <= 3 * 256 * 2.0 ** -24
    same = np.mean(gpu.view(np.uint32) == emu.view(np.uint32))
    assert same >= 0.99, f"{same:.4f} of the registers bit-identical (the fitted model gave 0.9966)"
    exact = Ab @ Bb.T
    assert np.mean(_isa_tile(gpu) == exact.astype(np.float32)) < 0.2      # the hardware does not round once


SETMAXNREG_SRC = r"""
extern "C" __global__ void k(int* out) {
    if (threadIdx.x >= 128) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    out[threadIdx.x] = threadIdx.x;
}
"""


def test_setmaxnreg_is_a_warpgroup_collective_no_op():
    module = parsed(compile_cuda(SETMAXNREG_SRC, "setmaxnreg.cu", ("--gpu-architecture=compute_90a",)).ptx)
    mem = Memory()
    p = mem.alloc(4 * 384)
    launch(module, "k", 1, 384, 0, [np.uint64(p)], mem)
    assert np.array_equal(np.frombuffer(mem.read(p, 4 * 384), np.int32), np.arange(384))
    with pytest.raises(Exception, match="not whole warpgroups"):
        launch(module, "k", 1, 96, 0, [np.uint64(p)], mem)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("wide", [False, True])
def test_emulator_against_this_gpu(dt, wide):
    """On a GPU: wgmma_probe_<dt> on fresh inputs (K = 256; normals, or normals scaled by 2^-6 .. 2^6) on
    the GPU and on the emulator: every register within the documented bound; bf16 normals mostly
    bit-identical (the distribution the model was fitted on)."""
    from helpers import wgmma_probes as W
    from kreg.runtime.gpu import GpuModule
    ptx = compile_cuda(SRC.read_text(), SRC.name, ("--gpu-architecture=compute_90a",)).ptx
    rng = np.random.default_rng(21 + wide)
    A, B = (rng.standard_normal((64, 256)).astype(np.float32) for _ in range(2))
    if wide:
        A, B = (x * np.exp2(rng.integers(-6, 7, x.shape)).astype(np.float32) for x in (A, B))
    g = W.gemm_probe(W.on_gpu, GpuModule(ptx), dt, A, B)
    e = W.gemm_probe(W.on_emulator, parsed(ptx), dt, A, B)
    Av, Bv = W.value_of(W.bits_of(A, dt), dt), W.value_of(W.bits_of(B, dt), dt)
    S = _isa_tile(np.ones((128, 32))) * (np.abs(Av) @ np.abs(Bv).T)
    assert (np.abs(_isa_tile(g) - _isa_tile(e)) / S).max() <= 3 * 256 * 2.0 ** -24
    if dt == "bf16" and not wide:
        assert np.mean(g.view(np.uint32) == e.view(np.uint32)) >= 0.99
