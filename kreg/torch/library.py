"""Every registry op as a torch custom op, `torch.ops.kreg.<op>`, its schema made from the op's
contract: the input tensors (inout ones marked mutated), then the dims no input shape names (ints),
then the by-value scalars (with their defaults); the outputs are returned, allocated at the contract's
shapes. A fake (meta) implementation checks the contract and gives the output shapes, so the ops trace
under torch.compile (fullgraph) and record into CUDA graphs; the real one resolves the variant
(variants.py), checks the layout and launches (launch.py)."""
from __future__ import annotations

import logging
import string

import torch

from kreg.registry.catalog import load_catalog
from kreg.registry.schema import Op

from . import launch, variants
from .contract import TORCH_DTYPES, check_layout, dims_and_types, free_dims, free_types, tensor_params, value_params

NAMESPACE = "kreg"
_lib = torch.library.Library(NAMESPACE, "FRAGMENT")
OPS: dict[str, Op] = {}
SKIPPED: dict[str, str] = {}      # op -> why it could not be defined (a user op's names torch's schema refuses)
log = logging.getLogger("kreg.torch")


def _scalar_type(op: Op, name: str) -> str:
    return "float" if op.params[name].dtype.startswith("f") else "int"


def schema(op: Op) -> str:
    """The torch schema of an op, e.g. `rms_norm(Tensor x, Tensor w, float eps=1e-06) -> Tensor`."""
    args, alias = [], iter(string.ascii_lowercase)
    for n in tensor_params(op, ("in", "inout")):
        args.append(f"Tensor({next(alias)}!) {n}" if op.params[n].role == "inout" else f"Tensor {n}")
    args += [f"int {d}" for d in free_dims(op)] + [f"ScalarType {v}" for v in free_types(op)]
    vals = value_params(op)
    args += [f"{_scalar_type(op, n)} {n}" for n in vals if op.params[n].default is None]
    args += [f"{_scalar_type(op, n)} {n}={op.params[n].default!r}" for n in vals if op.params[n].default is not None]
    outs = tensor_params(op, ("out",))
    ret = "()" if not outs else "Tensor" if len(outs) == 1 else "(" + ", ".join("Tensor" for _ in outs) + ")"
    return f"{op.name}({', '.join(args)}) -> {ret}"


def _order(op: Op) -> list[str]:
    vals = value_params(op)
    return (tensor_params(op, ("in", "inout")) + free_dims(op) + free_types(op) + [n for n in vals if op.params[n].default is None]
            + [n for n in vals if op.params[n].default is not None])


def _split(op: Op, args: tuple, kwargs: dict):
    named = dict(zip(_order(op), args)) | kwargs
    for n in value_params(op):
        named.setdefault(n, op.params[n].default)
    tensors = {n: named[n] for n in tensor_params(op, ("in", "inout"))}
    return (tensors, {d: named[d] for d in free_dims(op)}, {v: named[v] for v in free_types(op)},
            {n: named[n] for n in value_params(op)})


def _outputs(op: Op, dims: dict, types: dict, device) -> dict:
    return {n: torch.empty(op.shape(n, dims), dtype=TORCH_DTYPES[op.dtype_of(n, types)], device=device)
            for n in tensor_params(op, ("out",))}


def _result(outs: dict):
    vals = tuple(outs.values())
    return None if not vals else vals[0] if len(vals) == 1 else vals


def _real(op: Op):
    def impl(*args, **kwargs):
        tensors, given, gtypes, scalars = _split(op, args, kwargs)
        dims, types = dims_and_types(op, tensors, given, gtypes)
        dev = next(iter(tensors.values())).device
        outs = _outputs(op, dims, types, dev)
        check_layout(op, tensors | outs, dims)
        k = variants.kernel(op.name, types, "gpu" if dev.type == "cuda" else "cpu")
        launch.run(k, op, dims, tensors | outs, scalars)
        return _result(outs)
    return impl


def _fake(op: Op):
    def fake(*args, **kwargs):
        tensors, given, gtypes, _ = _split(op, args, kwargs)
        dims, types = dims_and_types(op, tensors, given, gtypes)
        return _result(_outputs(op, dims, types, next(iter(tensors.values())).device))
    return fake


def register_all() -> dict[str, Op]:
    """Define torch.ops.kreg.<op> for every op of the catalog (built-in and $KREG_HOME) not yet defined."""
    for name, op in sorted(load_catalog().ops.items()):
        if name in OPS or name in SKIPPED or not tensor_params(op, ("in", "inout")):
            continue
        try:
            _lib.define(schema(op))
        except Exception as e:   # noqa: BLE001 - one op's metadata never takes the others down
            SKIPPED[name] = f"{type(e).__name__}: {e}"
            log.warning("kreg.torch: op %s not defined: %s", name, SKIPPED[name])
            continue
        _lib.impl(name, _real(op), "CPU")
        _lib.impl(name, _real(op), "CUDA")
        torch.library.register_fake(f"{NAMESPACE}::{name}", _fake(op), lib=_lib)
        OPS[name] = op
    return OPS
