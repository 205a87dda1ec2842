"""Helpers of the kreg.torch tests: a results store holding verify results for the registry's safe bf16
variants (one per op, the first by name, as the engine's explicit plan takes: their exact PTX sha256,
proofs by the current checker, numerics on the CPU emulator; recorded, not re-proven, as
tests/engine/test_engine_cli.py does), and the ops' own float64 references and tolerances."""
import numpy as np

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.emulator.machine import DEVICE_KIND
from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.conformance.references import REFERENCES
from kreg.conformance.tolerance import bound, error_scales, tolerance_for
from kreg.registry.results import PROPS


def ptx_sha(e) -> str:
    v = e.variant
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).sha256


def record(store, e, ptx=None, verdict="safe", kind=DEVICE_KIND, proofs="proven"):
    ptx = ptx or ptx_sha(e)
    store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version=CHECKER_VERSION, stage="proof", op=e.op,
              name=e.name, tool_version="t", payload={"proofs": dict.fromkeys(PROPS, proofs),
                                                      "scopes": dict.fromkeys(PROPS, "all-dims")})
    store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version=CHECKER_VERSION, device_kind=kind, stage="verdict",
              op=e.op, name=e.name, tool_version="t", payload={"verdict": verdict, "numerics": "pass", "speed": None})


def safe_bf16(cat, ops) -> dict:
    """op -> the first safe bf16 variant of it by name."""
    out = {}
    for e in sorted(cat.entries, key=lambda e: e.name):
        if e.op in ops and e.variant.safety == "safe" and set(e.variant.types.values()) == {"bf16"}:
            out.setdefault(e.op, e)
    return out


def np64(t) -> np.ndarray:
    """A torch tensor on the host as float64 (exact for bf16/f16/f32), integers as they are."""
    return t.detach().cpu().double().numpy() if t.is_floating_point() else t.detach().cpu().numpy()


def assert_matches_reference(op, types: dict, dims: dict, inputs: dict, got: dict, scalars=None):
    """Every output within the op's own tolerance of its float64 reference (integer outputs exact)."""
    ins = {k: np64(v) for k, v in inputs.items()}
    want = REFERENCES[op.reference](**ins, **dims, **(scalars or {}))
    scales = error_scales(op, ins, dims, scalars)
    for name, g in got.items():
        w, g = np.asarray(want[name]), np64(g)
        assert g.shape == w.shape, (name, g.shape, w.shape)
        if not np.issubdtype(w.dtype, np.floating):
            assert np.array_equal(g, w), name
            continue
        tol = tolerance_for(op, op.dtype_of(name, types), dims)
        lim = bound(tol, np.abs(w), scales.get(name))
        err = np.abs(g - w)
        assert np.all(err <= lim), f"{op.name}.{name}: worst {np.max(err - lim):g} past its bound"
