"""kreg.runtime on both devices: load (sha256 checked, cached), kernel lookup, typed launches, a graph of
three launches replayed on new inputs, the PDL attribute; and the saxpy example in a subprocess."""
import os
import subprocess
import sys

import numpy as np
import pytest

from kreg import runtime
from kreg.checker.ptx.compile import compile_cuda
from kreg.runtime import PDL, LaunchConfig

from helpers.paths import ROOT

DEVICES = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]
SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void mul(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * y[i];
}
"""
N = 300
CFG = LaunchConfig(grid=(N + 127) // 128, block=128)


@pytest.fixture(scope="module")
def ptx():
    return compile_cuda(SOURCE, "runtime_test.cu")


def f32(buf):
    return buf.copy_to().view(np.float32)


def inputs(dev, rng, *bufs):
    out = []
    for b in bufs:
        h = rng.standard_normal(N).astype(np.float32)
        b.copy_from(h)
        out.append(h)
    return out


@pytest.mark.parametrize("kind", DEVICES)
def test_load_checks_sha256_and_caches(kind, ptx):
    dev = runtime.device(kind)
    mod = dev.load(ptx.ptx, sha256=ptx.sha256)
    assert isinstance(mod, runtime.Module) and mod.sha256 == ptx.sha256
    assert dev.load(ptx.ptx.encode()) is mod                     # one module per sha256 on a device
    assert sorted(mod.entries) == ["mul", "saxpy"]
    with pytest.raises(runtime.ShaMismatch, match="not the bytes that were proven"):
        dev.load(ptx.ptx, sha256="0" * 64)
    with pytest.raises(runtime.ShaMismatch):
        dev.load(ptx.ptx + "\n", sha256=ptx.sha256)


@pytest.mark.parametrize("kind", DEVICES)
def test_kernel_lookup_names_the_entries(kind, ptx):
    mod = runtime.device(kind).load(ptx.ptx)
    with pytest.raises(runtime.KernelNotFound, match=r"no kernel 'sxpy'.*entries: .*saxpy"):
        mod.kernel("sxpy")
    assert mod.kernel("saxpy") is mod.kernel("saxpy")


@pytest.mark.parametrize("kind", DEVICES)
def test_launch_computes_saxpy(kind, ptx):
    dev = runtime.device(kind)
    k = dev.load(ptx.ptx).kernel("saxpy")
    x, y, out = (dev.alloc(4 * N) for _ in range(3))
    hx, hy = inputs(dev, np.random.default_rng(1), x, y)
    k.launch(CFG, np.float32(2.5), x, y, out, N)      # a Python int for the .s32 param
    dev.sync()
    np.testing.assert_allclose(f32(out), np.float32(2.5) * hx + hy, rtol=1e-6, atol=1e-6)
    s = dev.stream()
    k.launch(CFG, 0.5, x, y, out, np.int32(N), stream=s)
    s.sync()
    np.testing.assert_allclose(f32(out), np.float32(0.5) * hx + hy, rtol=1e-6, atol=1e-6)


def test_arguments_are_checked_against_the_ptx_params(ptx):
    dev = runtime.device("cpu")
    k = dev.load(ptx.ptx).kernel("saxpy")
    x = dev.alloc(4 * N)
    with pytest.raises(runtime.ArgError, match="takes 5 params"):
        k.launch(CFG, 1.0, x, x, x)
    with pytest.raises(runtime.ArgError, match="not a 64-bit pointer"):
        k.launch(CFG, 1.0, x, x, x, x)
    with pytest.raises(runtime.ArgError, match="does not fit"):
        k.launch(CFG, 1.0, x, x, x, 1 << 40)
    with pytest.raises(runtime.ArgError, match="float64"):
        k.launch(CFG, np.float64(1.0), x, x, x, N)


@pytest.mark.parametrize("kind", DEVICES)
def test_graph_of_three_launches_replays_on_new_inputs(kind, ptx):
    dev = runtime.device(kind)
    mod = dev.load(ptx.ptx, sha256=ptx.sha256)
    saxpy, mul = mod.kernel("saxpy"), mod.kernel("mul")
    x, y, t, u, out = (dev.alloc(4 * N) for _ in range(5))
    with dev.capture() as graph:                        # t = 2x + y; u = t * x; out = 0.5u + y
        saxpy.launch(CFG, np.float32(2), x, y, t, N, stream=graph.stream)
        mul.launch(CFG, t, x, u, N, stream=graph.stream)
        saxpy.launch(CFG, np.float32(0.5), u, y, out, N, stream=graph.stream)
    stream, rng = dev.stream(), np.random.default_rng(2)
    for _ in range(2):
        hx, hy = inputs(dev, rng, x, y)
        graph.replay(stream)
        stream.sync()
        ht = np.float32(2) * hx + hy
        np.testing.assert_allclose(f32(out), np.float32(0.5) * (ht * hx) + hy, rtol=1e-5, atol=1e-6)
    # the same graph from a function
    g2 = dev.capture(lambda s: [saxpy.launch(CFG, np.float32(-1), x, y, out, N, stream=s)])
    g2.replay(stream)
    stream.sync()
    np.testing.assert_allclose(f32(out), hy - hx, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", DEVICES)
def test_pdl_attribute_is_accepted(kind, ptx):
    """Three launches with programmatic dependent launch, each independent of the others (these kernels
    do not wait with griddepcontrol.wait, so they must not read what the previous one writes)."""
    dev = runtime.device(kind)
    saxpy = dev.load(ptx.ptx).kernel("saxpy")
    cfg = LaunchConfig(CFG.grid, CFG.block, attributes={PDL})
    x, y, *outs = (dev.alloc(4 * N) for _ in range(5))
    hx, hy = inputs(dev, np.random.default_rng(3), x, y)
    s = dev.stream()
    for a, o in zip((1, 2, 3), outs):
        saxpy.launch(cfg, np.float32(a), x, y, o, N, stream=s)
    s.sync()
    graph = dev.capture(lambda st: [saxpy.launch(cfg, np.float32(-a), x, y, o, N, stream=st)
                                    for a, o in zip((1, 2, 3), outs)])
    for a, o in zip((1, 2, 3), outs):
        np.testing.assert_allclose(f32(o), np.float32(a) * hx + hy, rtol=1e-6, atol=1e-6)
    graph.replay(s)
    s.sync()
    for a, o in zip((1, 2, 3), outs):
        np.testing.assert_allclose(f32(o), np.float32(-a) * hx + hy, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="unknown launch attributes"):
        LaunchConfig(1, 1, attributes={"cooperative"})


def test_cpu_launch_errors_carry_the_emulator_kind(ptx):
    dev = runtime.device("cpu")
    k = dev.load(ptx.ptx).kernel("saxpy")
    x = dev.alloc(16)
    with pytest.raises(runtime.LaunchError) as e:
        k.launch(CFG, 1.0, x, x, x, N)                  # 300 elements in 16-byte buffers
    assert e.value.kind == "out-of-bounds"


@pytest.mark.parametrize("kind", DEVICES)
def test_saxpy_example_runs(kind, kreg_home):
    example = ROOT / "examples" / "saxpy_runtime.py"
    p = subprocess.run([sys.executable, str(example), "--device", kind], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, KREG_HOME=str(kreg_home)))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "launch and graph replay OK" in p.stdout


def test_runtime_imports_only_registry_and_checker():
    """The layers: registry <- checker <- runtime <- conformance <- engine; and the CPU path never
    imports CuPy."""
    import ast
    root = ROOT / "runtime"
    for f in root.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for n in names:
                assert not n.startswith(("kreg.conformance", "kreg.engine", "kreg.pipeline", "kreg.cli")), \
                    f"{f.name} imports {n}"
    code = ("import sys, numpy as np; from kreg import runtime; d = runtime.device('cpu'); b = d.alloc(8); "
            "assert 'cupy' not in sys.modules and 'kreg.conformance' not in sys.modules")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]


STATIC_PLUS_DYNAMIC = r"""
extern "C" __global__ void two_smem(const float* x, float* out, int n) {
    __shared__ float st[8192];                       // 32 KiB static
    extern __shared__ float dyn[];                   // 24 KiB dynamic: 56 KiB in all, past 48 KiB
    int t = threadIdx.x;
    for (int i = t; i < 8192; i += blockDim.x) st[i] = x[i % n];
    for (int i = t; i < 6144; i += blockDim.x) dyn[i] = 2.f * x[i % n];
    __syncthreads();
    if (t < n) out[t] = st[t] + dyn[t];
}
"""


@pytest.mark.parametrize("kind", DEVICES)
def test_static_plus_dynamic_shared_past_48k_launches(kind):
    """A kernel whose static arrays and dynamic shared memory together pass 48 KiB (each under it):
    the runtime opts in for the dynamic part (the GPU refuses the launch otherwise)."""
    dev = runtime.device(kind)
    k = dev.load(compile_cuda(STATIC_PLUS_DYNAMIC, "two_smem.cu").ptx).kernel("two_smem")
    n = 128
    x, out = dev.alloc(4 * n), dev.alloc(4 * n)
    hx = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    x.copy_from(hx)
    k.launch(LaunchConfig(grid=1, block=128, shared=6144 * 4), x, out, n)
    dev.sync()
    np.testing.assert_allclose(f32(out)[:n], 3 * hx, rtol=1e-6)


@pytest.mark.gpu
def test_the_gpu_reports_its_dram_peak_above_the_measured_copy():
    pytest.importorskip("cupy")
    from kreg.conformance.harness import open_harness
    from kreg.conformance.speed import copy_bandwidth
    dev = open_harness("gpu")
    peak, copy = dev.peak_bytes_per_s, copy_bandwidth(dev, 1 << 28, 5)
    assert peak is not None and copy < peak < 1.5 * copy, (peak, copy)
