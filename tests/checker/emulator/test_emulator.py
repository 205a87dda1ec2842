"""The PTX emulator: registry kernels against NumPy on hypothesis-chosen shapes, error reporting (out of
bounds, misalignment, runaway loops, traps, barriers), access tracing, and Memory."""
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreg.checker.emulator import machine as E
from kreg.checker.emulator import fpround as F
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.compile import compile_cuda

from helpers.paths import ROOT


@cache
def ptx(src: str) -> str:
    return compile_cuda(src).ptx


def kernel_ptx(rel: str) -> str:
    return ptx((ROOT / rel).read_text())


def bf16_random(rng, n, scale=1.0):
    return F.f32_to_bf16_rn((rng.standard_normal(n) * scale).astype(np.float32))


@cache
def _catalog():
    from kreg.registry.catalog import load_catalog
    return load_catalog()


def run_add(variant_name, n, seed):
    """A registry add variant, launched as its YAML says (through bind), on n random bf16 elements."""
    from kreg.checker.ptx.bind import bind
    cat = _catalog()
    v = cat.find(variant_name).variant
    module = P.parse(kernel_ptx(str(v.source_path.relative_to(ROOT))))
    rng = np.random.default_rng(seed)
    a, b = bf16_random(rng, n, 3), bf16_random(rng, n, 3)
    mem = E.Memory()
    pa, pb, po = (mem.alloc(2 * n, name) for name in ("a", "b", "out"))
    mem.write(pa, a)
    mem.write(pb, b)
    mem.write(po, np.full(n, 0x7FC1, np.uint16))
    for bl in bind(v, cat.ops["add"], module, {"N": n}, {"a": pa, "b": pb, "out": po}):
        E.run_bound(module, bl, mem)
    got = np.frombuffer(mem.read(po, 2 * n), np.uint16)
    want = F.f32_to_bf16_rn(F.bf16_to_f32(a) + F.bf16_to_f32(b))
    return got, want


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 3000), seed=st.integers(0, 2**32 - 1))
def test_add_bf16_matches_numpy_on_any_length(n, seed):
    got, want = run_add("add_bf16_safe", n, seed)
    assert (got == want).all()


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**32 - 1))
def test_add_bf16_vec_matches_numpy_on_any_length(n, seed):
    got, want = run_add("add_bf16_vec", n, seed)
    assert (got == want).all()


RMSNORM = (ROOT / "tests/data/corpus/rmsnorm_bf16.cu")


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 4), cols=st.integers(1, 900), block=st.sampled_from([64, 128, 256]),
       seed=st.integers(0, 2**32 - 1))
def test_rmsnorm_matches_float64_reference(rows, cols, block, seed):
    rng = np.random.default_rng(seed)
    x, w = bf16_random(rng, rows * cols), bf16_random(rng, cols)
    mem = E.Memory()
    px, pw, po = mem.alloc(x.nbytes, "x"), mem.alloc(w.nbytes, "w"), mem.alloc(x.nbytes, "y")
    mem.write(px, x)
    mem.write(pw, w)
    E.launch(ptx(RMSNORM.read_text()), "rmsnorm_bf16", rows, block, 0,
             [np.uint64(px), np.uint64(pw), np.uint64(po), np.int32(cols), np.float32(1e-6)], mem)
    y = F.bf16_to_f32(np.frombuffer(mem.read(po, x.nbytes), np.uint16)).reshape(rows, cols).astype(np.float64)
    xf = F.bf16_to_f32(x).reshape(rows, cols).astype(np.float64)
    ref = xf / np.sqrt((xf ** 2).mean(1, keepdims=True) + 1e-6) * F.bf16_to_f32(w)
    assert np.allclose(y, ref, rtol=2 ** -7, atol=1e-6)     # bf16 output: 8 significant bits


# ---- errors -----------------------------------------------------------------------------------------

STORE = r'''extern "C" __global__ void k(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i;
}'''


def test_out_of_bounds_store_names_thread_instruction_and_buffer():
    mem = E.Memory()
    other = mem.alloc(4096, "other")
    out = mem.alloc(100 * 4, "out")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx(STORE), "k", 2, 64, 0, [np.uint64(out), np.int32(128)], mem)
    err = e.value
    assert err.kind == "out-of-bounds"
    assert err.block == (1, 0, 0) and err.thread == (36, 0, 0)     # i = 100 is the first outside
    assert err.instr.op == "st" and err.address == out + 400 and err.buffer == "out"
    assert mem.read(other, 16) == bytes(16)                         # nothing else was touched


def test_negative_offset_and_host_safety():
    mem = E.Memory()
    out = mem.alloc(64, "out")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx(STORE), "k", 1, 32, 0, [np.uint64(out - 64), np.int32(32)], mem)
    assert e.value.kind == "out-of-bounds" and e.value.thread == (0, 0, 0) and e.value.buffer == "out"


def test_misaligned_load():
    src = r'''extern "C" __global__ void k(const char* p, int* out) {
        out[threadIdx.x] = *(const int*)(p + threadIdx.x * 4 + (threadIdx.x == 5));
    }'''
    mem = E.Memory()
    p, out = mem.alloc(256, "p"), mem.alloc(256, "out")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx(src), "k", 1, 32, 0, [np.uint64(p), np.uint64(out)], mem)
    assert e.value.kind == "misaligned" and e.value.thread == (5, 0, 0) and e.value.instr.op == "ld"
    assert e.value.address == p + 21


def test_shared_out_of_bounds():
    src = r'''extern "C" __global__ void k(int* out) {
        __shared__ int s[32];
        s[threadIdx.x] = threadIdx.x;
        __syncthreads();
        out[threadIdx.x] = s[threadIdx.x ^ 1];
    }'''
    mem = E.Memory()
    out = mem.alloc(256, "out")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx(src), "k", 1, 40, 0, [np.uint64(out)], mem)
    assert e.value.kind == "out-of-bounds" and e.value.thread == (32, 0, 0) and e.value.buffer == "shared"


def test_runaway_loop_hits_the_step_budget():
    src = r'''extern "C" __global__ void k(volatile int* flag, int* out) {
        int n = 0;
        if (threadIdx.x == 3) while (*flag == 0) n++;
        out[threadIdx.x] = n;
    }'''
    mem = E.Memory()
    flag, out = mem.alloc(4, "flag"), mem.alloc(128, "out")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx(src), "k", 1, 32, 0, [np.uint64(flag), np.uint64(out)], mem, max_steps=5000)
    assert e.value.kind == "step-limit" and e.value.thread == (3, 0, 0)


def test_trap():
    src = r'''extern "C" __global__ void k(int* out) { if (threadIdx.x == 7) __trap(); out[threadIdx.x] = 1; }'''
    mem = E.Memory()
    out = mem.alloc(128, "out")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx(src), "k", 1, 32, 0, [np.uint64(out)], mem)
    assert e.value.kind == "trap" and e.value.thread == (7, 0, 0)


BARRIERS = """.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<3>;
\tmov.u32 %r1, %tid.x;
\tsetp.lt.u32 %p1, %r1, 16;
\t@%p1 bra $L_a;
\tbar.sync 0;
\tret;
$L_a:
\tbar.sync 0;
\tret;
}
"""


def test_threads_waiting_at_different_barriers_are_reported():
    with pytest.raises(E.EmulatorError) as e:
        E.launch(BARRIERS, "k", 1, 32, 0, [np.uint64(0)], E.Memory())
    assert e.value.kind == "barrier-divergence"


def test_exited_threads_count_as_arrived_at_a_barrier():
    src = r'''extern "C" __global__ void k(int* out) {
        __shared__ int s[64];
        if (threadIdx.x >= 40) return;
        s[threadIdx.x] = threadIdx.x * 2;
        __syncthreads();
        out[threadIdx.x] = s[39 - threadIdx.x];
    }'''
    mem = E.Memory()
    out = mem.alloc(256, "out")
    E.launch(ptx(src), "k", 1, 64, 0, [np.uint64(out)], mem)
    assert np.frombuffer(mem.read(out, 160), np.int32).tolist() == [(39 - t) * 2 for t in range(40)]


def test_unsupported_instruction_is_reported_before_running():
    text = BARRIERS.replace("\tbar.sync 0;\n\tret;\n$L_a", "\tfns.b32 %r2, %r1, %r1, %r1;\n\tret;\n$L_a")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(text, "k", 1, 32, 0, [np.uint64(0)], E.Memory())
    assert e.value.kind == "unsupported" and e.value.instr.op == "fns" and e.value.instr.line == 11


# ---- tracing ----------------------------------------------------------------------------------------

def test_trace_records_every_access_with_its_barrier_epoch():
    src = (ROOT / "tests/data/corpus/block_reduce_tree.cu").read_text()
    mem = E.Memory()
    x, out = mem.alloc(4 * 300, "x"), mem.alloc(4 * 3, "out")
    mem.write(x, np.arange(300, dtype=np.float32))
    res = E.launch(ptx(src), "block_reduce_tree", 3, 128, 0, [np.uint64(x), np.uint64(out), np.int32(300)], mem,
                   trace=True)
    acc = res.accesses
    reads = [a for a in acc if a.space == "global" and a.kind == "read"]
    assert sorted(a.address for a in reads) == [x + 4 * i for i in range(300)]
    assert all(a.epoch == 0 and a.width == 4 for a in reads)
    writes = [a for a in acc if a.space == "global" and a.kind == "write"]
    assert [(a.block, a.thread, a.address, a.epoch) for a in sorted(writes, key=lambda a: a.block)] == \
        [((b, 0, 0), (0, 0, 0), out + 4 * b, 8) for b in range(3)]           # 1 + log2(128) barriers before
    first = [a for a in acc if a.space == "shared" and a.kind == "write" and a.epoch == 0]
    assert len(first) == 3 * 128 and {a.address for a in first} == {4 * t for t in range(128)}
    assert res.thread_instructions > res.steps > 0


def test_the_accesses_of_a_few_threads_are_those_of_the_whole_trace():
    """AccessTrace.of_threads (the witness replay's race check) gives exactly the accesses the full list has for
    those threads, in launch order; coordinates no thread has (outside the launch, negative, too wide) match none."""
    src = (ROOT / "tests/data/corpus/block_reduce_tree.cu").read_text()
    mem = E.Memory()
    x, out = mem.alloc(4 * 300, "x"), mem.alloc(4 * 3, "out")
    res = E.launch(ptx(src), "block_reduce_tree", 3, 128, 0, [np.uint64(x), np.uint64(out), np.int32(300)], mem,
                   trace=True)
    acc = res.accesses
    for pairs in ([((1, 0, 0), (5, 0, 0))], [((0, 0, 0), (0, 0, 0)), ((2, 0, 0), (127, 0, 0))]):
        want = [a for a in acc if (a.block, a.thread) in pairs]
        assert want and res.trace.of_threads(pairs) == want
    for nobody in (((3, 0, 0), (0, 0, 0)), ((0, 0, 0), (128, 0, 0)), ((0, 0, 0), (0, 1, 0)), ((0, 0), (0, 0)),
                   ((-1, 0, 0), (0, 0, 0)), ((0, 0, 0), (1 << 70, 0, 0))):
        assert res.trace.of_threads([nobody]) == []


def test_trace_budget_stops_a_launch_that_would_trace_too_much():
    src = (ROOT / "tests/data/corpus/block_reduce_tree.cu").read_text()
    args = lambda mem: [np.uint64(mem.alloc(4 * 300, "x")), np.uint64(mem.alloc(4 * 3, "out")), np.int32(300)]
    mem = E.Memory()
    n = len(E.launch(ptx(src), "block_reduce_tree", 3, 128, 0, args(mem), mem, trace=True).accesses)
    mem = E.Memory()
    assert len(E.launch(ptx(src), "block_reduce_tree", 3, 128, 0, args(mem), mem, trace=True,
                        max_trace=n).accesses) == n
    mem = E.Memory()
    with pytest.raises(E.EmulatorError) as e:
        E.launch(ptx(src), "block_reduce_tree", 3, 128, 0, args(mem), mem, trace=True, max_trace=n - 1)
    assert e.value.kind == "step-limit"


def test_memory_views_and_reads():
    mem = E.Memory()
    a = mem.alloc(10, "a")
    b = mem.alloc(20, "b", align=1024)
    assert b % 1024 == 0 and b > a + 10
    mem.write(a, np.arange(10, dtype=np.uint8))
    assert mem.read(a + 2, 3) == bytes([2, 3, 4])
    mem.view(a)[0] = 99
    assert mem.read(a, 1) == bytes([99])
    with pytest.raises(E.EmulatorError):
        mem.write(a + 8, b"abc")


@settings(max_examples=8, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_tiled_matmul_on_ragged_shapes(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 8, (m, k)).astype(np.float32)        # small integers: every sum is exact
    b = rng.integers(-8, 8, (k, n)).astype(np.float32)
    mem = E.Memory()
    pa, pb, pc = mem.alloc(a.nbytes, "a"), mem.alloc(b.nbytes, "b"), mem.alloc(4 * m * n, "c")
    mem.write(pa, a)
    mem.write(pb, b)
    E.launch(ptx((ROOT / "tests/data/corpus/matmul_tiled.cu").read_text()), "matmul_tiled", (-(-n // 16), -(-m // 16)),
             (16, 16), 0, [np.uint64(pa), np.uint64(pb), np.uint64(pc), np.int32(m), np.int32(n), np.int32(k)], mem)
    assert (np.frombuffer(mem.read(pc, 4 * m * n), np.float32).reshape(m, n) == a @ b).all()


def test_an_unemulated_form_of_a_known_instruction_is_a_clear_error():
    text = BARRIERS.replace("\tbar.sync 0;\n\tret;\n$L_a", "\tcvt.rn.tf32.f32 %r2, %r1;\n\tret;\n$L_a")
    with pytest.raises(E.EmulatorError) as e:
        E.launch(text, "k", 1, 32, 0, [np.uint64(0)], E.Memory())
    assert e.value.kind == "unsupported" and e.value.instr.line == 11 and "cvt" in str(e.value)


def test_szext_and_bmsk():
    text = """.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [p];
\tmov.u32 %r1, %tid.x;
\tszext.clamp.s32 %r2, 0x000000F0, %r1;
\tszext.wrap.u32 %r3, 0x000000F0, %r1;
\tbmsk.clamp.b32 %r4, %r1, 4;
\tmul.wide.u32 %rd2, %r1, 16;
\tadd.s64 %rd3, %rd1, %rd2;
\tst.global.v2.u32 [%rd3], {%r2, %r3};
\tst.global.u32 [%rd3+8], %r4;
\tret;
}
"""
    mem = E.Memory()
    p = mem.alloc(16 * 40)
    E.launch(text, "k", 1, 40, 0, [p], mem)
    r = np.frombuffer(mem.read(p, 640), np.uint32).reshape(40, 4)[:, :3]
    def sz(n, signed):
        v = 0xF0 & ((1 << n) - 1)
        return (v | (0xFFFFFFFF ^ ((1 << n) - 1))) if signed and n and v >> (n - 1) & 1 else v
    assert r[:, 0].tolist() == [sz(min(t, 32), True) for t in range(40)]
    assert r[:, 1].tolist() == [sz(t & 31, False) for t in range(40)]
    assert r[:, 2].tolist() == [(0xF << t) & 0xFFFFFFFF if t < 32 else 0 for t in range(40)]


def test_blocks_run_in_batches_with_the_same_results(monkeypatch):
    src = (ROOT / "tests/data/corpus/atomics_int.cu").read_text()

    def run():
        mem = E.Memory()
        a = mem.alloc(4000, "a")
        mem.write(a, np.random.default_rng(1).integers(-1000, 1000, 1000).astype(np.int32))
        outs = [mem.alloc(n, name) for n, name in ((64, "h"), (20, "s"), (16, "b"), (8, "g"))]
        E.launch(ptx(src), "atomics_int", 4, 256, 0, [np.uint64(a), *map(np.uint64, outs), np.int32(1000)], mem)
        return [mem.read(o, n) for o, n in zip(outs, (64, 20, 16, 8))]
    whole = run()
    monkeypatch.setattr(E, "BATCH_THREADS", 256)          # one block at a time
    assert run() == whole
