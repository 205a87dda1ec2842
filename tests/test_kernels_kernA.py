"""Every variant of add, rms_norm, add_rms_norm, silu_mul, embedding and gather_row, bf16 and f16, run
on the CPU through kreg's PTX emulator at small ragged shapes (tails, partial warps, several rows) and
compared with the float64 reference within the op's tolerance; outputs are poisoned with NaN bits
first, inputs must come back bit-identical."""
import dataclasses

import numpy as np
import pytest

from kreg.checker.compile import compile_cuda
from kreg.checker.emulator import Memory, run_bound
from kreg.conformance.dtypes import decode, encode, is_float, storage
from kreg.conformance.launch import bind, buffer_sizes, parsed
from kreg.conformance.references import REFERENCES
from kreg.registry.catalog import load_catalog

SHAPES = {
    "add": [{"N": 1003}, {"N": 3}, {"N": 4096 + 8}],
    "rms_norm": [{"T": 3, "H": 1032}, {"T": 2, "H": 8}, {"T": 1, "H": 5120}, {"T": 1, "H": 32768}],
    "add_rms_norm": [{"T": 3, "H": 1032}, {"T": 2, "H": 8}, {"T": 1, "H": 5120}],
    "silu_mul": [{"T": 3, "I": 1000}],
    "embedding": [{"T": 5, "V": 7, "H": 136}],
    "gather_row": [{"T": 5, "H": 1032, "R": 4}, {"T": 1, "H": 8, "R": 0}],
}
CAT = load_catalog()
ENTRIES = [e for e in CAT.entries if e.op in SHAPES]


def run_variant(entry, dims, seed=0, variant=None):
    """(outputs decoded to float64, reference outputs, op) for one variant at one shape."""
    v, op = variant or entry.variant, CAT.ops[entry.op]
    rng = np.random.default_rng(seed)
    module = parsed(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
    mem, ptrs, host, bits = Memory(), {}, {}, {}
    for name, nbytes in buffer_sizes(v, op, dims).items():
        ptrs[name] = mem.alloc(nbytes, name)
        p = op.params.get(name)
        dt = op.dtype_of(name, v.types) if p else None
        if p is None or p.role == "out":
            mem.write(ptrs[name], np.full(nbytes, 0xFF, np.uint8))          # NaN bit patterns
            continue
        shape = op.shape(name, dims)
        if p.values is not None:
            host[name] = rng.integers(int(p.values[0](dims)), int(p.values[1](dims)) + 1, size=shape)
        else:
            host[name] = rng.standard_normal(shape) * 2
        bits[name] = encode(host[name], dt)
        mem.write(ptrs[name], bits[name])
    for bl in bind(v, op, module, dims, ptrs):
        run_bound(module, bl, mem)
    exact = {k: decode(b, op.dtype_of(k, v.types)) for k, b in bits.items()}
    scalars = {p.name: p.default for p in op.params.values() if p.role == "scalar" and not p.shape}
    want = REFERENCES[op.reference](**exact, **dims, **scalars)
    got = {}
    for name in list(want) + [k for k in bits if op.params[k].role == "in"]:
        dt = op.dtype_of(name, v.types)
        raw = np.frombuffer(mem.read(ptrs[name], bits[name].nbytes if name in bits else
                                     int(np.prod(op.shape(name, dims))) * storage(dt).itemsize), storage(dt))
        if op.params[name].role == "in":
            assert np.array_equal(raw, bits[name].reshape(-1)), f"{v.name} changed its input {name}"
        else:
            got[name] = decode(raw, dt).reshape(op.shape(name, dims))
    return got, want, op


def mismatches(entry, dims, variant=None):
    """Messages for every output outside the op's tolerance (NaN poison left behind counts)."""
    got, want, op = run_variant(entry, dims, variant=variant)
    why = []
    for name, ref in want.items():
        dt = op.dtype_of(name, entry.variant.types)
        assert is_float(dt)
        tol = op.tolerance[dt]
        bad = ~(np.abs(got[name] - ref) <= tol["atol"] + tol["rtol"] * np.abs(ref))
        if bad.any():
            why.append(f"{entry.name} {dims} {name}: {bad.sum()} of {bad.size} outside tolerance, first at "
                       f"{np.argwhere(bad)[0]}: got {got[name][bad][0]} want {ref[bad][0]}")
    return why


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_variant_matches_reference_on_the_emulator(entry):
    for dims in SHAPES[entry.op]:
        assert mismatches(entry, dims) == []


def test_every_op_of_this_set_has_a_safe_and_an_unsafe_variant_per_dtype():
    for opname in SHAPES:
        have = {(e.variant.safety, tuple(e.variant.types.values())) for e in ENTRIES if e.op == opname}
        assert have == {(s, (t,)) for s in ("safe", "unsafe") for t in ("bf16", "f16")}, opname


@pytest.mark.parametrize("name,old,new", [
    ("rms_norm_bf16_safe", "v[k].v[j] * r * g.v[j]", "v[k].v[j] * r"),                 # weight dropped
    ("silu_mul_f16_safe", "if (c < I)", "if (c + 8 < I)"),                              # last vector missed
    ("add_rms_norm_bf16_safe", "s[k].v[j] += a.v[j];", "s[k].v[j] += a.v[j] * 1.01f;"),  # 1% off
    ("gather_row_bf16_safe", "(long long)R * H", "(long long)(R - 1) * H"),             # wrong row
])
def test_a_broken_kernel_is_caught(tmp_path, name, old, new):
    entry = next(e for e in ENTRIES if e.name == name)
    src = entry.variant.source_path.read_text()
    assert old in src
    (tmp_path / "broken.cu").write_text(src.replace(old, new))
    broken = dataclasses.replace(entry.variant, source="broken.cu", path=str(tmp_path / "broken.yaml"))
    assert any(mismatches(entry, dims, broken) for dims in SHAPES[entry.op])
