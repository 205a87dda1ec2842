"""The emulator's step budget (item d) and order-dependent float atomics (item e): a hung kernel fails
fast with a clear reason; the CPU applies colliding atomics in a seeded order on the repeat launch, so
float atomics that change the result show as nondeterminism, and a variant whose PTX adds floats
atomically must declare `deterministic: false`."""
import dataclasses
import time

import numpy as np
import pytest

from kreg.checker.emulator import machine as E
from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import CpuHarness
from kreg.conformance.numerics import run_case, run_numerics
from kreg.registry import limits as L
from kreg.registry.preflight import FLOAT_ATOMICS, determinism, float_atomics
from kreg.registry.schema import load_op, load_variant

from helpers.paths import DATA

HOSTILE = DATA / "hostile"
HADD = load_op(HOSTILE / "_common" / "kernels" / "ops" / "hadd.yaml")


def _hostile(case: str, name: str):
    return load_variant(HOSTILE / case / "kernels" / "unsafe" / "hadd" / f"{name}.yaml", {"hadd": HADD})


def _ptx(v):
    return compile_cuda(v.source_path.read_text(), v.source_path.name).ptx


def test_step_budget_grows_with_the_case_and_is_capped():
    assert L.step_budget(0, 0) == L.STEPS_FLOOR
    assert L.step_budget(256, 744) == L.STEPS_FLOOR + 1000 * L.STEPS_PER_UNIT
    assert L.step_budget(10**9, 10**9) == L.STEPS_CAP


def test_an_infinite_loop_fails_fast_with_a_clear_reason():
    v = _hostile("infinite_loop", "spins")
    t = time.perf_counter()
    num = run_numerics(CpuHarness(), _ptx(v), v, HADD, {"tiny": {"N": 64}, "small": {"N": 1000}})
    assert time.perf_counter() - t < 30
    assert num.status == "fail" and len(num.cases) == 1          # the run stops at the first hang
    (why,) = num.failures()
    assert "step budget exceeded (an infinite loop?)" in why and "256 threads and 192 buffer elements" in why


SPIN = r'''extern "C" __global__ void k(volatile int* flag, int* out) {
    int n = 0;
    while (*flag == 0) n++;
    out[blockIdx.x * blockDim.x + threadIdx.x] = n;
}'''


def test_the_budget_counts_time_not_just_steps():
    ptx = compile_cuda(SPIN).ptx
    for threads in (32, 32768):                     # a step to 32768 threads costs 9
        mem = E.Memory()
        flag, out = mem.alloc(4), mem.alloc(4 * threads)
        with pytest.raises(E.EmulatorError, match="step budget exceeded") as e:
            E.launch(ptx, "k", threads // 32, 32, 0, [np.uint64(flag), np.uint64(out)], mem, max_cost=9000)
        steps = int(str(e.value).split("(an infinite loop?): ")[1].split()[0])
        per_step = 1 + threads // L.STEP_THREADS
        assert steps == (9000 - L.BATCH_STEPS) // per_step + 1          # the step that went over
    nop = 'extern "C" __global__ void k(int* out) { if (threadIdx.x == 12345) out[0] = 1; }'
    t = time.perf_counter()
    with pytest.raises(E.EmulatorError, match="spent after .* of 2147483647 blocks"):  # each batch costs too
        E.launch(compile_cuda(nop).ptx, "k", 2**31 - 1, 1024, 0, [np.uint64(out)], mem, max_cost=20_000)
    assert time.perf_counter() - t < 10


SUM = r'''extern "C" __global__ void k(const float* x, float* sum, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { atomicAdd(sum, x[i]); atomicAdd(count, 1); }
}'''


def _sum(seed, x):
    mem = E.Memory()
    px, ps, pc = mem.alloc(x.nbytes, "x"), mem.alloc(4, "sum"), mem.alloc(4, "count")
    mem.write(px, x)
    E.launch(compile_cuda(SUM).ptx, "k", 4, 1024, 0, [np.uint64(px), np.uint64(ps), np.uint64(pc), np.int32(x.size)],
             mem, atomic_seed=seed)
    return mem.read(ps, 4), int(np.frombuffer(mem.read(pc, 4), np.int32)[0])


def test_seeded_atomic_order_changes_float_sums_only():
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    fixed = _sum(None, x)
    assert fixed == _sum(None, x)                       # thread order: the same bits every time
    sums = {_sum(s, x)[0] for s in (1, 2, 3)}
    assert len(sums) > 1                                # another order, other bits
    assert {_sum(s, x)[1] for s in (1, 2)} == {4096}    # integer atomics do not care


def test_float_atomics_are_found_in_ptx():
    assert float_atomics(compile_cuda(SUM).ptx) == ["atom.global.add.f32"]
    bf16 = ('#include <cuda_bf16.h>\nextern "C" __global__ void k(__nv_bfloat16* s, float* d, int* c) '
            '{ atomicAdd(s, __float2bfloat16(1.0f)); float o = atomicAdd(d + 1, 2.0f); d[0] = o; atomicAdd(c, 1); }')
    assert float_atomics(compile_cuda(bf16).ptx) == ["atom.add.noftz.bf16", "atom.global.add.f32"]
    ints = 'extern "C" __global__ void k(int* c, unsigned long long* d) { atomicAdd(c, 1); atomicAdd(d, 2ull); }'
    assert float_atomics(compile_cuda(ints).ptx) == []


def test_a_deterministic_claim_with_float_atomics_is_refused_before_launching():
    v = _hostile("float_atomics_claimed_deterministic", "atomic_sum")
    ptx = _ptx(v)
    num = run_numerics(CpuHarness(), ptx, v, HADD, {"tiny": {"N": 64}})
    assert num.status == "fail" and not num.cases
    assert num.failures() == [f"{FLOAT_ATOMICS} (atom.global.add.f32)"]
    assert determinism(dataclasses.replace(v, deterministic=False), ptx) == []


def test_the_repeat_launch_shows_order_dependent_float_atomics():
    v = _hostile("float_atomics_claimed_deterministic", "atomic_sum")
    dev = CpuHarness()
    res = run_case(dev, dev.load(_ptx(v)), v, HADD, "tiny", {"N": 64}, np.random.default_rng(0))
    assert any("launch 3 (repeat): output out is not deterministic" in f for f in res.failures), res.failures
    ok = dataclasses.replace(v, deterministic=False)
    res = run_case(dev, dev.load(_ptx(v)), ok, HADD, "tiny", {"N": 64}, np.random.default_rng(0))
    assert res.ok, res.failures
