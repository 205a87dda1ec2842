"""Launch a resolved variant on torch tensors. On a GPU: the tensors' own addresses, bound through
checker/bind.py, launched on torch's current stream (no host synchronisation; scratch buffers from
torch's allocator, so a CUDA graph capture records them in its pool). On the CPU: a fresh emulator
runs the same PTX on copies of the tensors, and the outputs are copied back."""
from __future__ import annotations

import torch

from kreg import runtime
from kreg.checker.ptx.bind import BindError, bind, buffer_sizes
from kreg.engine.plan import OpKernel
from kreg.registry.schema import Op

from .contract import check_aligned
from .errors import ContractError, KregTorchError
from .variants import CPU_MAX_COST

_streams: dict[int, runtime.Stream] = {}


def run(k: OpKernel, op: Op, dims: dict, tensors: dict, scalars: dict, outputs=("out", "inout")) -> None:
    """Launch the variant serving these dims (k.at(dims)); `tensors`: every tensor param, outputs
    allocated; the outputs (and inout params) are written in place."""
    k = k.at(dims)
    dev = next(iter(tensors.values())).device
    try:
        if dev.type == "cuda":
            _run_gpu(k, op, dims, tensors, scalars)
        else:
            _run_cpu(k, op, dims, tensors, scalars)
    except BindError as e:
        raise ContractError(f"{op.name} ({k.name}) cannot run at {dims}: {e}") from None
    except runtime.LaunchError as e:
        raise KregTorchError(f"{op.name} ({k.name}): {e}") from None


def _stream(kernel_dev) -> runtime.Stream:
    """torch's current stream as a runtime Stream (CuPy's view of the same CUDA stream)."""
    ptr = torch.cuda.current_stream().cuda_stream
    s = _streams.get(ptr)
    if s is None:
        import cupy
        s = _streams[ptr] = runtime.Stream(kernel_dev, cupy.cuda.ExternalStream(ptr))
    return s


def _run_gpu(k: OpKernel, op: Op, dims: dict, tensors: dict, scalars: dict) -> None:
    d = next(iter(tensors.values())).device
    if d.index is not None and d.index != torch.cuda.current_device():
        raise ContractError(f"{op.name}: tensors on {d}, but the current CUDA device is {torch.cuda.current_device()} "
                            "(use `with torch.cuda.device(...)`)")
    v = k.entry.variant
    ptrs = {n: t.data_ptr() for n, t in tensors.items()}
    check_aligned(op, ptrs)
    scratch = {}
    if v.scratch:
        sizes = buffer_sizes(v, op, dims)
        scratch = {s: torch.empty(max(sizes[s], 1), dtype=torch.uint8, device=d) for s in v.scratch}
        ptrs |= {s: t.data_ptr() for s, t in scratch.items()}
    stream = _stream(k.module.device)
    for b in bind(v, op, k.module.parsed, dims, ptrs, scalars):
        k.module.kernel(b.entry).launch(runtime.LaunchConfig(b.grid, b.block, b.shared), *b.args, stream=stream)


def _bytes(t: torch.Tensor):
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy()


def _run_cpu(k: OpKernel, op: Op, dims: dict, tensors: dict, scalars: dict) -> None:
    cpu = runtime.device("cpu", max_cost=CPU_MAX_COST)
    mod = cpu.load(k.module.ptx, sha256=k.module.sha256)        # the same PTX bytes, checked again
    v = k.entry.variant
    bufs = {}
    for n, t in tensors.items():
        bufs[n] = b = cpu.alloc(t.numel() * t.element_size(), n)
        if op.params[n].role != "out" and t.numel():
            b.copy_from(_bytes(t))
    if v.scratch:
        sizes = buffer_sizes(v, op, dims)
        bufs |= {s: cpu.alloc(sizes[s], s) for s in v.scratch}
    check_aligned(op, {n: b.ptr for n, b in bufs.items()})
    for b in bind(v, op, mod.parsed, dims, {n: b.ptr for n, b in bufs.items()}, scalars):
        mod.kernel(b.entry).launch(runtime.LaunchConfig(b.grid, b.block, b.shared), *b.args)
    for n, t in tensors.items():
        if op.params[n].role in ("out", "inout") and t.numel():
            raw = torch.from_numpy(bufs[n].copy_to().copy())
            t.copy_(raw.view(t.dtype).reshape(t.shape))
