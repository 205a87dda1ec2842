"""Programmatic dependent launch: the static check of checker/pdl.py (griddepcontrol.wait before every
memory access) accepts kernels that wait first and refuses one that reads, branches or waits under a
predicate before its wait; the emulator and the prover treat both griddepcontrol instructions as
no-ops; the engine gives the PDL attribute to exactly the decode launches whose kernels pass the
check, and the decode ops' variants (safe and unsafe) opt in; a step on the GPU gives the same bits
with and without PDL."""
import numpy as np
import pytest

from kreg import runtime
from kreg.checker import ptx as P
from kreg.checker.compile import compile_cuda
from kreg.checker.pdl import wait_first_problem, waits_first
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
    if (i < n) y[i] = 0.f;
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
    "no_wait": """
extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}""",
}
ACCEPTED = {"wait_first", "launch_then_wait"}


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
                          "rms_norm", "decode_advance")


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


def test_the_engine_gives_pdl_to_the_launches_that_wait_first():
    dev = runtime.device("cpu")
    plan = EP.explicit(dev, "bf16", ops=("gemv", "attention_merge"))
    gemv = plan["gemv"].launches({"N": 64, "K": 128}, {"W": 0x10000, "x": 0x20000, "y": 0x30000})
    merge = plan["attention_merge"].launches({"Hq": 2, "P": 4}, {"o_part": 0x10000, "lse_part": 0x20000,
                                                                 "out": 0x30000})
    assert [ln.pdl_ready for ln in gemv + merge] == [True] * len(gemv) + [False] * len(merge)
    assert all(runtime.PDL in ln.with_pdl().config.attributes for ln in gemv)
    assert all(ln.with_pdl() is ln and not ln.config.attributes for ln in merge)
