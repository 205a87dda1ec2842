"""The emulator's fast paths (a converged batch issued without per-thread PCs, a minority of threads run
compacted) change nothing observable: outputs, launch counters, traced accesses and errors are
identical to the plain path (machine.FAST_PATHS off: every step through per-thread PCs and masks), on
an lm_head-like gemv whose threads diverge (7 of 8 idle in the K loop at K = 128) and on kernels with
barriers, warp shuffles and atomics; launches of several batches run together (merged) only where the
batches are independent, and a launch whose blocks read what other batches write runs batch by batch."""
import numpy as np
import pytest

from kreg.checker.emulator import fpround as F
from kreg.checker.emulator import machine as E
from kreg.checker.ptx.compile import compile_cuda
from kreg.registry.catalog import load_catalog
from kreg.runtime import parsed

CAT = load_catalog()


def module_of(variant_name):
    v = next(e for e in CAT.kernels if e.name == variant_name).variant
    return parsed(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)


def gemv(n, k, fast, monkeypatch, w_rows=None, **kw):
    """(y bits, LaunchResult) of gemv_bf16_safe on seeded W [n, k], x [k]; W holds w_rows rows."""
    monkeypatch.setattr(E, "FAST_PATHS", fast)
    rng = np.random.default_rng(7)
    w = F.f32_to_bf16_rn(rng.standard_normal((w_rows or n) * k).astype(np.float32))
    x = F.f32_to_bf16_rn(rng.standard_normal(k).astype(np.float32))
    mem = E.Memory()
    pw, px, py = mem.alloc(w.nbytes, "W"), mem.alloc(x.nbytes, "x"), mem.alloc(2 * n, "y")
    mem.write(pw, w)
    mem.write(px, x)
    mem.write(py, np.full(2 * n, 0xFF, np.uint8))
    res = E.launch(module_of("gemv_bf16_safe"), "gemv_bf16", -(-n // 4), 256, 0,
                   [np.uint64(pw), np.uint64(px), np.uint64(py), np.int32(n), np.int32(k)], mem, **kw)
    return np.frombuffer(mem.read(py, 2 * n), np.uint16), res, w, x


def counters(res):
    return res.steps, res.thread_instructions, res.cost


def test_lm_head_like_gemv_is_bit_identical_to_the_plain_path(monkeypatch):
    used = {"_compact": 0, "_uniform_step": 0}

    def counting(name):
        real = getattr(E._Machine, name)

        def counted(self, *a):
            used[name] += 1
            return real(self, *a)
        return counted
    for name in used:
        monkeypatch.setattr(E._Machine, name, counting(name))
    y_fast, r_fast, w, x = gemv(4100, 128, True, monkeypatch)           # 9 batches: the last group has one
    assert used["_compact"] > 0 and used["_uniform_step"] > 0          # both fast paths ran
    y_plain, r_plain, _, _ = gemv(4100, 128, False, monkeypatch)
    assert np.array_equal(y_fast, y_plain)
    assert counters(r_fast) == counters(r_plain)
    # and it is a gemv: within one bf16 rounding (plus fp32 sums) of the float64 product
    ref = F.bf16_to_f32(w).astype(np.float64).reshape(4100, 128) @ F.bf16_to_f32(x).astype(np.float64)
    got = F.bf16_to_f32(y_fast).astype(np.float64)
    assert np.all(np.abs(got - ref) <= 2e-3 + 2 ** -8 * np.abs(ref))


def test_traced_accesses_are_identical(monkeypatch):
    _, r_fast, _, _ = gemv(64, 128, True, monkeypatch, trace=True)
    _, r_plain, _, _ = gemv(64, 128, False, monkeypatch, trace=True)
    assert r_fast.accesses == r_plain.accesses and len(r_fast.accesses) > 0


@pytest.mark.parametrize("kw", [{}, {"max_cost": 300}], ids=["out-of-bounds", "step-budget"])
def test_errors_name_the_same_thread_and_instruction(monkeypatch, kw):
    """W one row short: the read of row N-1 (issued while 7 of 8 threads wait elsewhere, so compacted)
    faults; a small step budget runs out mid-launch. Same message either way."""
    msgs = []
    for fast in (True, False):
        with pytest.raises(E.EmulatorError) as e:
            gemv(4096, 128, fast, monkeypatch, w_rows=4095, **kw)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "thread" in msgs[0]


@pytest.mark.parametrize("name,dims", [
    ("rms_norm_bf16_safe", {"T": 5, "H": 520}),
    ("rms_norm_bf16_safe", {"T": 700, "H": 520}),                          # 3 batches, merged
    ("attention_decode_bf16_safe", {"Hq": 4, "Hkv": 2, "S": 37, "P": 3}),
    ("attention_decode_bf16_safe", {"Hq": 16, "Hkv": 8, "S": 64, "P": 40}),  # 3-D grid, 2 batches
    ("argmax_bf16_safe", {"B": 3, "V": 696}),
])
def test_registry_kernels_are_bit_identical_to_the_plain_path(monkeypatch, name, dims):
    from kreg.checker.ptx.bind import bind, buffer_sizes
    from kreg.conformance.dtypes import encode
    entry = next(e for e in CAT.kernels if e.name == name)
    v, op = entry.variant, CAT.ops[entry.op]
    module = module_of(name)
    results = []
    for fast in (True, False):
        monkeypatch.setattr(E, "FAST_PATHS", fast)
        rng = np.random.default_rng(3)
        mem, ptrs = E.Memory(), {}
        for pname, nbytes in buffer_sizes(v, op, dims).items():
            ptrs[pname] = mem.alloc(nbytes, pname)
            p = op.params.get(pname)
            if p is not None and p.role == "in":
                host = (rng.integers(int(p.values[0](dims)), int(p.values[1](dims)) + 1, size=op.shape(pname, dims))
                        if p.values is not None else rng.standard_normal(op.shape(pname, dims)))
                mem.write(ptrs[pname], encode(host, op.dtype_of(pname, v.types)))
            else:
                mem.write(ptrs[pname], np.full(nbytes, 0xFF, np.uint8))
        runs = [counters(E.launch(module, bl.entry, bl.grid, bl.block, bl.shared, bl.args, mem))
                for bl in bind(v, op, module, dims, ptrs)]
        results.append((runs, {pn: mem.read(a, mem.allocs[i].size) for i, (pn, a) in enumerate(ptrs.items())}))
    assert results[0] == results[1]


CHAIN = r"""
extern "C" __global__ void chain(float* a, int n, int shift, int sparse) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;      // reads what thread i ^ shift writes (a race:
    if (i < n && (i ^ shift) < n && (i & sparse) == 0)  // the emulator's batch order decides)
        a[i] = a[i ^ shift] * 0.5f + 1.0f;
}
"""


@pytest.mark.parametrize("shift,sparse,n,merged", [
    (65536, 0, 4 * 32768, False), (64, 0, 4 * 32768, True),
    (65536, 7, 5 * 32768 + 256, False), (64, 7, 5 * 32768 + 256, True),   # 1 thread in 8: compacted
])
def test_batches_that_read_each_others_writes_run_batch_by_batch(monkeypatch, shift, sparse, n, merged):
    """shift 65536: a thread reads a value that a thread two batches away (32768 threads a batch) writes,
    so the result depends on the batch order; shift 64: within its own batch, independent batches. With
    sparse 7 only every 8th thread runs it (compacted), and the launch ends in a group of one batch."""
    module = parsed(compile_cuda(CHAIN).ptx)
    outcome = []
    real = E._launch_merged

    def watched(*a, **kw):
        try:
            r = real(*a, **kw)
        except Exception as e:
            outcome.append(type(e).__name__)
            raise
        outcome.append("merged")
        return r
    monkeypatch.setattr(E, "_launch_merged", watched)
    results = []
    for fast in (True, False):
        monkeypatch.setattr(E, "FAST_PATHS", fast)
        mem = E.Memory()
        pa = mem.alloc(4 * n, "a")
        mem.write(pa, np.arange(n, dtype=np.float32))
        r = E.launch(module, "chain", n // 256, 256, 0,
                     [np.uint64(pa), np.int32(n), np.int32(shift), np.int32(sparse)], mem)
        results.append((mem.read(pa, 4 * n), counters(r)))
    assert results[0] == results[1]
    assert outcome == (["merged"] if merged else ["_Dependent"])
