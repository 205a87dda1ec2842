"""An op's contract (kernels/ops/*.yaml) held against torch tensors before anything is launched: every
tensor param present with its rank, shape and dtype; the dims read from the shapes (or given) within
their ranges and requirements; contiguous, on one device, non-overlapping (the prover assumes distinct
buffers), 256-byte aligned where the kernel reads them in place (the prover's assumption), and index
tensors within their `values` range (on the CPU checked here; on a GPU by torch._assert_async, which
stops the stream before the kernel runs, without a host synchronisation)."""
from __future__ import annotations

import torch

from kreg.registry.schema import Op

from .errors import ContractError

TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64,
                "i8": torch.int8, "u8": torch.uint8, "i32": torch.int32, "i64": torch.int64,
                "u32": torch.uint32, "u64": torch.uint64}
KREG_DTYPES = {t: k for k, t in TORCH_DTYPES.items()}
ALIGN = 256


def tensor_params(op: Op, roles=("in", "inout", "out")) -> list[str]:
    return [p.name for p in op.params.values() if p.role in roles or (p.role == "scalar" and p.shape and "in" in roles)]


def value_params(op: Op) -> list[str]:
    """Scalars passed by value (floats and ints), in contract order."""
    return [p.name for p in op.params.values() if p.role == "scalar" and not p.shape]


def _solve_steps(op: Op) -> list[tuple]:
    """(dim, param, axis, expr): the order in which the input shapes determine the dims, each step an
    extent whose expression has one dim not yet known ([T, H] gives T and H; then [T, 2 * I] gives I)."""
    exprs = [(n, i, e) for n in tensor_params(op, ("in", "inout")) for i, e in enumerate(op.params[n].shape)]
    known, steps, progress = set(), [], True
    while progress:
        progress = False
        for n, i, e in exprs:
            unknown = e.names() - known
            if len(unknown) == 1 and (d := next(iter(unknown))) in op.dims:
                known.add(d)
                steps.append((d, n, i, e))
                progress = True
    return steps


def free_dims(op: Op) -> list[str]:
    """The dims the input shapes do not determine: the caller gives them (attention_prefill's start, the
    decode splits P, ...)."""
    known = {d for d, *_ in _solve_steps(op)}
    return [d for d in op.dims if d not in known]


def free_types(op: Op) -> list[str]:
    """The type variables no input's dtype binds (attention_merge's output dtype): the caller names them."""
    bound = {op.params[n].dtype for n in tensor_params(op, ("in", "inout"))}
    return [v for v in op.types if v not in bound]


def _solve(op: Op, e, d: str, env: dict, extent: int) -> int | None:
    """The value of d for which e (nondecreasing in d, as shape extents are) equals extent, if any."""
    lo, hi = op.dims[d]
    at = lambda x: e(env | {d: x})
    try:
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (mid + 1, hi) if at(mid) < extent else (lo, mid)
        return lo if at(lo) == extent else None
    except Exception:           # noqa: BLE001 - an extent the expression cannot give: reported by the caller
        return None


def dims_and_types(op: Op, tensors: dict, given: dict, given_types: dict | None = None) -> tuple[dict, dict]:
    """The dims (read from the input shapes, plus `given`) and the type binding of a call; a ContractError
    for a missing tensor, a rank, shape or dtype the contract does not allow."""
    dims = {k: int(v) for k, v in given.items()}
    types = {}
    for var, dt in (given_types or {}).items():
        if KREG_DTYPES.get(dt) not in op.types[var]:
            raise ContractError(f"{op.name}: {var} = {dt}; the contract allows "
                                f"{', '.join(str(TORCH_DTYPES[d]) for d in op.types[var])}")
        types[var] = KREG_DTYPES[dt]
    for name in tensor_params(op, ("in", "inout")):
        t, p = tensors.get(name), op.params[name]
        if not isinstance(t, torch.Tensor):
            raise ContractError(f"{op.name}: {name} must be a tensor, got {type(t).__name__}")
        if t.dim() != len(p.shape):
            raise ContractError(f"{op.name}: {name} has shape {tuple(t.shape)}, the contract says "
                                "[" + ", ".join(e.text for e in p.shape) + "]")
    for d, name, i, e in _solve_steps(op):
        if d not in dims:
            x = _solve(op, e, d, dims, int(tensors[name].shape[i]))
            if x is None:
                raise ContractError(f"{op.name}: {name} has shape {tuple(tensors[name].shape)}: no {d} in "
                                    f"{list(op.dims[d])} makes its extent {e.text} = {tensors[name].shape[i]}")
            dims[d] = x
    for name in tensor_params(op, ("in", "inout")):
        t, p = tensors[name], op.params[name]
        kd = KREG_DTYPES.get(t.dtype)
        if p.dtype in op.types:
            if kd not in op.types[p.dtype]:
                raise ContractError(f"{op.name}: {name} is {t.dtype}; the contract allows "
                                    f"{', '.join(str(TORCH_DTYPES[d]) for d in op.types[p.dtype])}")
            if types.setdefault(p.dtype, kd) != kd:
                raise ContractError(f"{op.name}: {name} is {t.dtype} but another {p.dtype} argument is "
                                    f"{TORCH_DTYPES[types[p.dtype]]}: one dtype for all of them")
        elif kd != p.dtype:
            raise ContractError(f"{op.name}: {name} is {t.dtype}, the contract says {TORCH_DTYPES[p.dtype]}")
    if why := op.dims_ok(dims):
        raise ContractError(f"{op.name}: dims {dims} outside its contract: {'; '.join(why)}")
    for name in tensor_params(op, ("in", "inout")):
        if tuple(tensors[name].shape) != (want := op.shape(name, dims)):
            raise ContractError(f"{op.name}: {name} has shape {tuple(tensors[name].shape)}, the contract says "
                                f"{want} at {dims}")
    return dims, types


def check_layout(op: Op, tensors: dict, dims: dict) -> None:
    """One device, contiguous, no two params overlapping, index values in range (see the module)."""
    devs = {t.device for t in tensors.values()}
    if len(devs) > 1:
        raise ContractError(f"{op.name}: tensors on several devices: {', '.join(sorted(map(str, devs)))}")
    spans = []
    for name, t in tensors.items():
        if not t.is_contiguous():
            raise ContractError(f"{op.name}: {name} is not contiguous (stride {t.stride()}); pass .contiguous()")
        if t.numel():
            spans.append((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size(), name))
    spans.sort()
    for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
        if b0 < a1:
            raise ContractError(f"{op.name}: {an} and {bn} overlap in memory; the kernel was proven for distinct "
                                "buffers (pass a copy)")
    for name, t in tensors.items():
        p = op.params[name]
        if p.values is None or p.role == "out":
            continue
        lo, hi = (int(e(dims)) for e in p.values)
        if t.device.type == "cpu":
            bad = t[(t < lo) | (t > hi)]
            if bad.numel():
                raise ContractError(f"{op.name}: {name} holds {int(bad[0])}, outside [{lo}, {hi}] (its contract)")
        else:
            torch._assert_async(((t >= lo) & (t <= hi)).all(), f"kreg {op.name}: {name} outside [{lo}, {hi}]")


def check_aligned(op: Op, pointers: dict) -> None:
    """Every address the kernel is given is 256-byte aligned (the prover's assumption)."""
    for name, ptr in pointers.items():
        if ptr % ALIGN:
            raise ContractError(f"{op.name}: {name} starts at {ptr:#x}, not {ALIGN}-byte aligned (the proofs assume "
                                "it): pass a fresh tensor (.clone()) rather than a view into another")
