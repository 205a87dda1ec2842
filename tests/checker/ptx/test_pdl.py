"""Programmatic dependent launch: the static check of checker/ptx/pdl.py (griddepcontrol.wait before every
memory access) accepts kernels that wait first and refuses one that reads, branches or waits under a
predicate before its wait; the emulator and the prover treat both griddepcontrol instructions as
no-ops; the engine gives the PDL attribute to exactly the decode launches whose kernels pass the
check, and the decode ops' variants (safe and unsafe) opt in, the gemv also with its L2 prefetch before the wait; a step on the GPU gives the same bits
with and without PDL; conformance times such a variant also with PDL, as the engine runs it."""
import numpy as np
import pytest

from kreg import runtime
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.ptx.pdl import wait_first_problem, waits_first
from kreg.engine import plan as EP
from kreg.registry.catalog import load_catalog

WAIT, LAUNCH = 'asm volatile("griddepcontrol.wait;" ::: "memory");', \
    'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");'
SOURCES = {
    "wait_first": f"""
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {{
    {WAIT}
    {LAUNCH}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}}""",
    "launch_then_wait": f"""
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {{
    {LAUNCH}
    {WAIT}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}}""",
    # reads x[0] before it waits: x may be what the previous kernel is still writing
    "reads_before_wait": f"""
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {{
    float a = x[0];
    {WAIT}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}}""",
    # writes before it waits: the previous kernel may still read y
    "writes_before_wait": f"""
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[0] = 0.f;
    {WAIT}
    if (i < n) y[i] = 2.f * x[i];
}}""",
    # the wait under a branch: threads past n skip it (and may touch memory on another path)
    "wait_under_branch": f"""
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        {WAIT}
        y[i] = 2.f * x[i];
    }}
}}""",
    # an L2 prefetch before the wait moves no data into the program: accepted
    "l2_prefetch_then_wait": f"""
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    asm volatile("prefetch.global.L2 [%0];" :: "l"(x + min(i, n - 1)));
    asm volatile("prefetch.L2 [%0];" :: "l"(x + min(i, n - 1)));
    {WAIT}
    if (i < n) y[i] = 2.f * x[i];
}}""",
    # an L1 prefetch is refused: the L1 is not coherent with the predecessor's writes
    "l1_prefetch_then_wait": f"""
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    asm volatile("prefetch.global.L1 [%0];" :: "l"(x + min(i, n - 1)));
    {WAIT}
    if (i < n) y[i] = 2.f * x[i];
}}""",
    "no_wait": """
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}""",
}
ACCEPTED = {"wait_first", "launch_then_wait", "l2_prefetch_then_wait"}


def kernel(name):
    return P.parse(compile_cuda(SOURCES[name], f"{name}.cu").ptx).kernel("k")


@pytest.mark.parametrize("name", list(SOURCES))
def test_the_check_accepts_only_a_wait_before_any_memory_access(name):
    k = kernel(name)
    assert any(i.op == "griddepcontrol" for i in k.instrs) == (name != "no_wait")
    why = wait_first_problem(k)
    assert waits_first(k) == (name in ACCEPTED), why
    if name not in ACCEPTED:
        assert why.startswith("k: ")


def test_the_refusal_names_the_first_access():
    assert "ld.global" in wait_first_problem(kernel("reads_before_wait"))
    assert "st.global" in wait_first_problem(kernel("writes_before_wait"))
    assert "prefetch.global.L1" in wait_first_problem(kernel("l1_prefetch_then_wait"))
    assert "no (unpredicated) griddepcontrol.wait" in wait_first_problem(kernel("no_wait"))


def test_a_predicated_wait_does_not_count():
    ptx = compile_cuda(SOURCES["wait_first"], "w.cu").ptx.replace("\tgriddepcontrol.wait;", "\t@%p9 griddepcontrol.wait;")
    assert "@%p9 griddepcontrol.wait" in ptx
    k = P.parse(ptx.replace(".reg .pred", ".reg .pred %p9;\n\t.reg .pred", 1)).kernel("k")
    assert not waits_first(k)


def test_the_emulator_runs_both_instructions_as_no_ops():
    dev = runtime.device("cpu")
    k = dev.load(compile_cuda(SOURCES["wait_first"], "w.cu").ptx).kernel("k")
    n = 100
    x, y = dev.alloc(4 * n), dev.alloc(4 * n)
    hx = np.arange(n, dtype=np.float32)
    x.copy_from(hx)
    k.launch(runtime.LaunchConfig(1, 128, attributes={runtime.PDL}), x, y, n)
    assert np.array_equal(y.copy_to().view(np.float32), 2 * hx)


DECODE_OPS_THAT_OPT_IN = ("gemv", "add_rms_norm", "silu_mul", "qk_norm_rope_kv", "argmax", "embedding",
                          "rms_norm", "decode_advance", "gemv_swiglu", "attention_decode", "attention_merge",
                          "rms_norm_gemv", "gemv_residual", "rms_norm_gemv_swiglu")


def test_the_decode_ops_variants_opt_in():
    cat = load_catalog()
    checked = 0
    for e in cat.entries:
        if e.op not in DECODE_OPS_THAT_OPT_IN or e.variant.vendor:
            continue
        v = e.variant
        mod = P.parse(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
        for ln in v.launches:
            assert waits_first(mod.kernel(ln.entry)), wait_first_problem(mod.kernel(ln.entry))
            checked += 1
    assert checked >= 2 * len(DECODE_OPS_THAT_OPT_IN)


@pytest.mark.parametrize("pf", [1, 3])
def test_the_gemv_with_its_l2_prefetch_still_waits_first_and_computes_the_same(pf):
    cat = load_catalog()
    v = cat.find("gemv_bf16_safe").variant
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options + (f"-DGEMV_PREFETCH={pf}",)).ptx
    k = P.parse(ptx).kernel("gemv_bf16")
    assert sum(i.op == "prefetch" for i in k.instrs) == pf and waits_first(k)
    dev = runtime.device("cpu")
    gemv = dev.load(ptx).kernel("gemv_bf16")
    N, K = 7, 520                       # a ragged last block: its prefetches clamp to W's last row
    rng = np.random.default_rng(0)
    W = rng.standard_normal((N, K)).astype(np.float32)
    x = rng.standard_normal(K).astype(np.float32)
    bf = lambda a: (a.view(np.uint32) >> 16).astype(np.uint16)        # truncation to bf16 bits
    dW, dx, dy = dev.alloc(2 * N * K), dev.alloc(2 * K), dev.alloc(2 * N)
    dW.copy_from(bf(W))
    dx.copy_from(bf(x))
    gemv.launch(runtime.LaunchConfig(-(-N // 4), 256), dW, dx, dy, N, K)
    up = lambda b: (b.astype(np.uint32) << 16).view(np.float32)
    want = up(bf(W)).astype(np.float64) @ up(bf(x)).astype(np.float64)
    got = up(dy.copy_to().view(np.uint16))
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_the_engine_gives_pdl_to_the_launches_that_wait_first():
    dev = runtime.device("cpu")
    plan = EP.explicit(dev, "bf16", ops=("gemv", "gemm"), optional=EP.FUSIONS)
    gemv = plan["gemv"].launches({"N": 64, "K": 128}, {"W": 0x10000, "x": 0x20000, "y": 0x30000})
    gemm = plan["gemm"].launches({"T": 4, "N": 64, "K": 128}, {"X": 0x10000, "W": 0x20000, "Y": 0x30000})
    assert [ln.pdl_ready for ln in gemv + gemm] == [True] * len(gemv) + [False] * len(gemm)
    assert all(runtime.PDL in ln.with_pdl().config.attributes for ln in gemv)
    assert all(ln.with_pdl() is ln and not ln.config.attributes for ln in gemm)
    assert {r["op"]: r["pdl"] for r in plan.report()} == {"gemv": True, "gemm": False, "gemv_swiglu": True}


@pytest.mark.gpu
def test_conformance_times_a_variant_that_waits_first_also_with_pdl_as_the_engine_runs_it():
    pytest.importorskip("cupy")
    from kreg.conformance.harness import open_harness
    from kreg.conformance.speed import copy_bandwidth, time_case
    dev, cat = open_harness("gpu"), load_catalog()
    bw = copy_bandwidth(dev, 1 << 26, 3)
    for name, pdl in (("gemv_bf16_safe", True), ("gemv_bf16_cublas", False)):
        v = cat.find(name).variant
        op = cat.ops["gemv"]
        ptx = None if v.vendor else compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
        r = time_case(dev, dev.load_variant(v, op, ptx), v, op, op.cases["qwen3-0.6b-qkv"], bw, batches=5)
        assert (r["pdl_us"] is not None) == pdl, name
        assert r["engine_us"] == (r["pdl_us"] if pdl else r["median_us"]) and r["engine_us"] > 0
