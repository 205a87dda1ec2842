"""Registry variants run through kreg's PTX emulator at small seeded shapes of their op, against the
float64 reference within the op's tolerance: the shapes, one run, the mismatches, and a source mutated
(also inside the kreg header it includes) for kernels broken on purpose."""
import numpy as np

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.emulator.machine import Memory, run_bound
from kreg.conformance.dtypes import decode, encode, is_float, storage
from kreg.checker.ptx.bind import bind, buffer_sizes
from kreg.runtime import parsed
from kreg.conformance.references import REFERENCES
from kreg.conformance.shapes import ragged_dims
from kreg.conformance.tolerance import bound, error_scales, tolerance_for
from kreg.registry.catalog import load_catalog
from kreg.registry.source_policy import KREG_INCLUDE_DIR, kreg_includes

CAT = load_catalog()
ENTRIES = CAT.kernels            # every variant of the registry: a new op needs no edit here


def shapes(entry) -> list[dict[str, int]]:
    """Small seeded shapes inside the op's ranges (ragged ones first: tails, partial warps)."""
    for budget in (48 << 10, 256 << 10, 2 << 20):      # the smallest that the op's ranges admit
        found = ragged_dims(CAT.ops[entry.op], entry.variant, 3, budget, seed=5)
        if found:
            return found
    return []


def run_variant(entry, dims, seed=0, variant=None):
    """(outputs decoded to float64, reference outputs, op, error scales) for one variant at one shape."""
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
    return got, want, op, error_scales(op, exact, dims, scalars)


def mutated(src: str, old: str, new: str) -> str:
    """The source with `old` replaced by `new`, where the kernel's code may sit in a kreg header it
    includes (that header is then pasted in place of its include)."""
    if old not in src:
        for h in sorted(kreg_includes(src) or ()):
            text = (KREG_INCLUDE_DIR / h).read_text()
            if old in text:
                src = src.replace(f'#include "{h}"', text.replace("#pragma once\n", ""))
                break
    assert old in src
    return src.replace(old, new)


def mismatches(entry, dims, variant=None):
    """Messages for every output outside the op's tolerance (NaN poison left behind counts)."""
    got, want, op, scales = run_variant(entry, dims, variant=variant)
    why = []
    for name, ref in want.items():
        dt = op.dtype_of(name, entry.variant.types)
        tol = tolerance_for(op, dt, dims) if is_float(dt) else {"atol": 0, "rtol": 0}
        with np.errstate(invalid="ignore"):      # -inf == -inf (an empty attention split) is a match
            bad = ~((got[name] == ref) | (np.abs(got[name] - ref) <= bound(tol, np.abs(ref), scales.get(name))))
        if bad.any():
            why.append(f"{entry.name} {dims} {name}: {bad.sum()} of {bad.size} outside tolerance, first at "
                       f"{np.argwhere(bad)[0]}: got {got[name][bad][0]} want {ref[bad][0]}")
    return why
