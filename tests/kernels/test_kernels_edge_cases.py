"""qk_norm_rope_kv, qk_norm_rope_prefill and argmax variants run on the CPU through kreg's PTX emulator
at small ragged shapes: outputs within the op's tolerance of the float64 reference, inputs untouched,
cache rows outside the written positions untouched, argmax ties resolved to the lowest index."""
import numpy as np
import pytest

from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.dtypes import decode, encode, storage
from kreg.checker.ptx.bind import bind, buffer_sizes
from kreg.runtime import parsed
from kreg.conformance.references import REFERENCES, rope_tables
from kreg.conformance.tolerance import bound as tolerance_bound, error_scales, tolerance_for
from kreg.registry.catalog import load_catalog

emulator = pytest.importorskip("kreg.checker.emulator.machine")

CAT = load_catalog()
OPS = ("qk_norm_rope_kv", "qk_norm_rope_prefill", "argmax")


def _variants(op):
    return [pytest.param(e, id=e.name) for e in CAT.kernels if e.op == op]


def run_cpu(entry, dims, host, scalars=None):
    """Run every launch of a variant in the emulator; returns (outputs as float64/int, inputs read back)."""
    v, op = entry.variant, CAT.ops[entry.op]
    c = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
    module = parsed(c.ptx)
    mem = emulator.Memory()
    sizes = buffer_sizes(v, op, dims)
    ptrs = {}
    for name, nbytes in sizes.items():
        ptrs[name] = mem.alloc(nbytes, name)
        if name in host:
            mem.write(ptrs[name], encode(host[name], op.dtype_of(name, v.types)))
        else:
            mem.write(ptrs[name], b"\xff" * nbytes)       # poison: NaN patterns
    for bl in bind(v, op, module, dims, ptrs, scalars):
        emulator.run_bound(module, bl, mem)
    back = {}
    for name in op.params:
        if name in sizes:
            dt = op.dtype_of(name, v.types)
            raw = np.frombuffer(mem.read(ptrs[name], sizes[name]), storage(dt))
            back[name] = decode(raw, dt).reshape(op.shape(name, dims))
    return back


def _exact(op, v, host):
    """Inputs as the device holds them (rounded to their dtypes), in float64."""
    return {k: decode(encode(x, op.dtype_of(k, v.types)), op.dtype_of(k, v.types)) for k, x in host.items()}


def _check(entry, dims, host):
    v, op = entry.variant, CAT.ops[entry.op]
    got = run_cpu(entry, dims, host)
    exact = _exact(op, v, host)
    want = REFERENCES[op.reference](**exact, **dims)
    scales = error_scales(op, exact, dims)
    for name, x in exact.items():
        if op.params[name].role == "in":
            assert np.array_equal(got[name], x, equal_nan=True), f"input {name} changed"
    worst = 0.0
    for name, ref in want.items():
        dt = op.dtype_of(name, v.types)
        if dt in op.tolerance and op.tolerance[dt]["rtol"] + op.tolerance[dt]["atol"] > 0:
            bound = tolerance_bound(tolerance_for(op, dt, dims), np.abs(ref), scales.get(name))
            err = np.abs(got[name] - ref)
            assert np.all(err <= bound), f"{name}: worst error/tolerance {np.nanmax(err / bound):.3g}"
            worst = max(worst, float(np.max(err / bound)))
        else:
            assert np.array_equal(got[name], ref), f"{name}: {got[name]} != {ref}"
    return got, want, worst


def _rope_host(rng, T, Hq, Hkv, S, real_tables=True):
    cos, sin = rope_tables(S) if real_tables else (rng.standard_normal((S, 64)), rng.standard_normal((S, 64)))
    return dict(qkv=rng.standard_normal((T, Hq + 2 * Hkv, 128)), q_norm_w=rng.standard_normal(128),
                k_norm_w=rng.standard_normal(128), rope_cos=cos, rope_sin=sin,
                k_cache=rng.standard_normal((S, Hkv, 128)), v_cache=rng.standard_normal((S, Hkv, 128)))


@pytest.mark.parametrize("entry", _variants("qk_norm_rope_prefill"))
def test_prefill_on_the_emulator(entry):
    rng = np.random.default_rng(11)
    # 5 tokens x 12 heads x 8 lanes = 480 threads: a partial last block and masked lanes in a warp;
    # the real tables at positions 4000..4004 (large angles), then standard-normal tables as conformance uses.
    for real in (True, False):
        dims = {"T": 5, "Hq": 6, "Hkv": 3, "S": 4010, "start": 4000}
        host = _rope_host(rng, 5, 6, 3, 4010, real)
        got, want, worst = _check(entry, dims, host)
        assert np.array_equal(got["k_cache"][:4000], decode(encode(host["k_cache"][:4000], entry.variant.types["DT"]),
                                                           entry.variant.types["DT"]))
        assert worst > 0.02      # the rounding is really exercised (the tolerance is not loose by orders)


@pytest.mark.parametrize("entry", _variants("qk_norm_rope_kv"))
def test_decode_on_the_emulator(entry):
    rng = np.random.default_rng(12)
    dims = {"Hq": 4, "Hkv": 2, "S": 9}
    host = _rope_host(rng, 1, 4, 2, 9)
    host["qkv"] = host["qkv"][0]
    host["pos"] = np.array([7])
    got, want, _ = _check(entry, dims, host)
    rows = [p for p in range(9) if p != 7]
    dt = entry.variant.types["DT"]
    assert np.array_equal(got["v_cache"][rows], decode(encode(host["v_cache"][rows], dt), dt))
    assert not np.array_equal(got["k_cache"][7], decode(encode(host["k_cache"][7], dt), dt))


@pytest.mark.parametrize("entry", _variants("argmax"))
def test_argmax_on_the_emulator(entry):
    rng = np.random.default_rng(13)
    # (row, positions of the maximum, expected index): the last element, a tie across chunks, the first
    # element, ties on both sides of the 8192-element chunk boundary and of a 4096 boundary
    plans = {(3, 9000): [(0, [8999], 8999), (1, [5, 8997], 5), (2, [0, 8192], 0)],
             (2, 4104): [(0, [4096], 4096), (1, [4095, 4096], 4095)],
             (2, 8200): [(0, [8192, 4096], 4096), (1, [8191, 8192], 8191)],
             (1, 8): [(0, [7], 7)]}
    for (B, V), plan in plans.items():
        x = np.round(rng.standard_normal((B, V)) * 4) / 4          # coarse values: many ties below the max
        for row, where, _ in plan:
            x[row, where] = 9.0
        got, want, _ = _check(entry, {"B": B, "V": V}, {"logits": x})
        assert got["out"].tolist() == [want for _, _, want in plan]
