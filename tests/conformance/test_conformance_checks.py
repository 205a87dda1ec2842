"""The conformance checks themselves, on host memory: a test double of a device whose "kernels" are
Python functions over the same guarded buffers, so each check is shown to fire (and to stay quiet on
a correct kernel) without a GPU or the emulator. The real devices are tested in test_broken_variants."""
import numpy as np
import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.harness import Harness
from kreg.conformance.dtypes import decode, encode
from kreg.conformance.inputs import make_inputs, poison_bits
from kreg.conformance.numerics import compare, run_numerics
from kreg.registry.catalog import load_catalog


class HostHarness(Harness):
    name = "host"
    guard = 256

    def __init__(self, kernel):
        self.kernel, self.allocs, self.next = kernel, {}, 1 << 20
        self.launches = 0

    def _alloc(self, nbytes, name):
        base = self.next
        self.allocs[base] = np.zeros(nbytes, dtype=np.uint8)
        self.next += nbytes + 4096
        return base, base

    def _write(self, handle, offset, data):
        self.allocs[handle][offset:offset + data.size] = data

    def _read(self, handle):
        return self.allocs[handle]

    def u16(self, ptr, start, stop):
        """A uint16 view of memory [ptr + 2*start, ptr + 2*stop) inside one allocation (guards included)."""
        for base, a in self.allocs.items():
            if base <= ptr < base + a.size:
                off = ptr - base
                return a[off + 2 * start:off + 2 * stop].view(np.uint16)
        raise AssertionError("pointer outside every allocation")

    def load(self, ptx):
        from kreg.runtime import parsed
        return parsed(ptx)

    def launch(self, module, bl):
        self.launches += 1
        a, b, out, n = (int(x) for x in bl.args)
        self.kernel(self, a, b, out, n)


def add_bits(dev, a, b, n):
    x = decode(dev.u16(a, 0, n), "bf16") + decode(dev.u16(b, 0, n), "bf16")
    return encode(x, "bf16")


def good(dev, a, b, out, n):
    dev.u16(out, 0, n)[:] = add_bits(dev, a, b, n)


def writes_input(dev, a, b, out, n):
    good(dev, a, b, out, n)
    dev.u16(a, 0, n)[n // 2] ^= 1


def skips_tail(dev, a, b, out, n):
    m = n - n % 8
    dev.u16(out, 0, m)[:] = add_bits(dev, a, b, n)[:m]


def writes_past_end(dev, a, b, out, n):
    good(dev, a, b, out, n)
    dev.u16(out, n, n + 3)[:] = 0


def writes_before_start(dev, a, b, out, n):
    good(dev, a, b, out, n)
    dev.u16(out, -1, 0)[:] = 0


class Caching:
    def __init__(self):
        self.memo = None

    def __call__(self, dev, a, b, out, n):
        if self.memo is None or self.memo.size != n:
            self.memo = add_bits(dev, a, b, n)
        dev.u16(out, 0, n)[:] = self.memo


class Nondeterministic:
    def __init__(self):
        self.calls = 0

    def __call__(self, dev, a, b, out, n):
        self.calls += 1
        bits = add_bits(dev, a, b, n)
        if self.calls % 2:     # round toward zero on every other launch: within one bf16 rounding
            x = (decode(dev.u16(a, 0, n), "bf16") + decode(dev.u16(b, 0, n), "bf16")).astype(np.float32)
            bits = (x.view(np.uint32) >> 16).astype(np.uint16)
        dev.u16(out, 0, n)[:] = bits


def nan_when_ragged(dev, a, b, out, n):
    good(dev, a, b, out, n)
    if n % 8:
        dev.u16(out, 0, n)[n - 1] = 0x7FC0


def off_by_one_ulp_everywhere_times_three(dev, a, b, out, n):
    x = decode(dev.u16(a, 0, n), "bf16") + decode(dev.u16(b, 0, n), "bf16")
    dev.u16(out, 0, n)[:] = encode(x * 1.03, "bf16")


@pytest.fixture(scope="module")
def add_safe():
    cat = load_catalog()
    e = cat.find("add_bf16_safe")
    v = e.variant
    return v, cat.ops["add"], compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


CASES = {"ragged-1023": {"N": 1023}, "n-1024": {"N": 1024}, "ragged-13": {"N": 13}}


def run(kernel, add_safe, deterministic=True):
    import dataclasses
    v, op, ptx = add_safe
    if not deterministic:
        v = dataclasses.replace(v, deterministic=False)
    return run_numerics(HostHarness(kernel), ptx, v, op, CASES, seed=1)


def text(num):
    return "\n".join(num.failures())


def test_correct_kernel_passes_every_check(add_safe):
    num = run(good, add_safe)
    assert num.status == "pass", text(num)
    assert [c.case for c in num.cases] == list(CASES)
    st = num.cases[0].outputs["out"]
    assert 0 < st["max_rel_err"] <= 0.0079 and st["worst"]["err_over_tol"] <= 1
    assert st["elements"] == 1023


@pytest.mark.parametrize("kernel, message", [
    (writes_input, r"input a \(in\) was written: 1 of 1023 elements changed, first at \[511\]"),
    (skips_tail, r"launch 1: output out: 7 of 1023 elements never written \(still hold the poison\), first at \[1016\]"),
    (writes_past_end, r"out: 6 guard bytes after the buffer overwritten \(byte offsets 2046\.\.2051"),
    (writes_before_start, r"out: 2 guard bytes before the buffer overwritten \(byte offsets -2\.\.-1"),
    (Caching(), r"launch 2 \(fresh inputs\): output out still holds the previous launch's answer .*cached across"),
    (Nondeterministic(), r"output out is not deterministic: two identical launches gave different bits"),
    (nan_when_ragged, r"out: 1 NaN where the reference is finite, first at \[1022\]"),
    (off_by_one_ulp_everywhere_times_three, r"elements outside atol=0 rtol=0.0079; worst at \[\d+\]"),
])
def test_each_broken_kernel_fails_its_check(add_safe, kernel, message):
    num = run(kernel, add_safe)
    assert num.status == "fail"
    assert any(__import__("re").search(message, f) for f in num.failures()), text(num)


def test_nan_only_for_one_shape_class(add_safe):
    num = run(nan_when_ragged, add_safe)
    assert [c.ok for c in num.cases] == [False, True, False]


def test_declared_nondeterminism_is_allowed(add_safe):
    assert run(Nondeterministic(), add_safe, deterministic=False).status == "pass"


def test_compare_statistics_and_nan_handling():
    want = np.array([1.0, -2.0, 0.0, np.inf, 4.0])
    got = np.array([1.004, -2.0, 0.0, np.inf, np.nan])
    why, st = compare("y", got, want, "bf16", {"atol": 0.0, "rtol": 0.0079})
    assert len(why) == 1 and "1 NaN where the reference is finite, first at [4]" in why[0]
    assert st["max_abs_err"] == pytest.approx(0.004) and st["max_rel_err"] == pytest.approx(0.004)
    assert st["worst"]["index"] == [4] and st["worst"]["err_over_tol"] == float("inf")
    why, _ = compare("y", got[:4], want[:4], "bf16", {"atol": 0.0, "rtol": 0.0079})
    assert why == []
    why, _ = compare("y", np.array([1.01]), np.array([1.0]), "bf16", {"atol": 0.0, "rtol": 0.0079})
    assert "1 of 1 elements outside" in why[0] and "1.27x the tolerance" in why[0]
    why, _ = compare("i", np.array([3, 4]), np.array([3.0, 5.0]), "i32", None)
    assert "1 of 2 elements differ" in why[0] and "got 4, want 5" in why[0]


def test_poison_is_a_nan_no_arithmetic_makes():
    for dt in ("f16", "bf16", "f32", "f64"):
        p = decode(poison_bits(dt, 0), dt)
        assert np.isnan(p)
        assert poison_bits(dt, 0) != poison_bits(dt, 1)
    # the canonical NaN a kernel produces (0/0) is not the poison, so it is reported as a NaN, not "unwritten"
    assert encode(np.array([np.nan]), "bf16")[0] != poison_bits("bf16", 0)


def test_inputs_are_seeded_and_rounded(add_safe):
    v, op, _ = add_safe
    a = make_inputs(op, v, {"N": 100}, np.random.default_rng(3))
    b = make_inputs(op, v, {"N": 100}, np.random.default_rng(3))
    assert set(a) == {"a", "b"} and np.array_equal(a["a"], b["a"])
    assert a["a"].dtype == np.uint16 and a["a"].shape == (100,) and not np.array_equal(a["a"], a["b"])
    x = decode(a["a"], "bf16")
    assert np.isfinite(x).all() and 0.5 < x.std() < 1.5                      # standard normal, rounded


def test_index_params_take_their_range_ends_as_edge_values():
    """A case's first draw puts the top of an index range in the first element (attention_decode's n = S),
    its second the bottom in about half of the cases (uniform otherwise); other elements stay uniform."""
    from kreg.conformance.inputs import index_values
    op = load_catalog().ops["attention_decode"]
    dims = {"Hq": 4, "Hkv": 1, "S": 1000, "P": 3}
    firsts = [int(index_values(op, "n", dims, np.random.default_rng(s), (1,), draw=0)[0]) for s in range(20)]
    seconds = [int(index_values(op, "n", dims, np.random.default_rng(s), (1,), draw=1)[0]) for s in range(40)]
    plain = [int(index_values(op, "n", dims, np.random.default_rng(s), (1,))[0]) for s in range(20)]
    assert firsts == [1000] * 20
    assert 5 <= seconds.count(1) <= 35 and any(1 < x < 1000 for x in seconds)
    assert all(1 <= x <= 1000 for x in plain) and len(set(plain)) > 5
    ids = index_values(load_catalog().ops["embedding"], "ids", {"T": 50, "V": 7, "H": 8},
                       np.random.default_rng(0), (50,), draw=0)
    assert ids[0] == 6 and len(set(ids.tolist())) > 3
