"""Every kernel contract the engine's launches rely on, checked against a model's config before any
weight is read or uploaded: a dry run of the launch builders (launches.py) for the decode step and a
prefill pass, against stand-in buffers, that records each op's dims and asks the op (dims ranges and
`requires`) whether it takes them."""
from __future__ import annotations

from collections import defaultdict

from . import launches as L
from .config import Qwen3Config
from .plan import Plan


class _Buf:
    """A stand-in for a device buffer: address 0, never read or written."""
    ptr = 0
    nbytes = 0


class _Model:
    """What the launch builders read of a Resident, with stand-in buffers."""

    def __init__(self, cfg: Qwen3Config, dtype: str, S: int, layers: int | None = None):
        self.cfg, self.dtype, self.S = cfg, dtype, S
        layers = layers or min(cfg.num_hidden_layers, 2)          # every layer launches the same dims
        self.w = defaultdict(_Buf)
        self.layers = [defaultdict(_Buf) for _ in range(layers)]
        self.cache = [(_Buf(), _Buf()) for _ in range(layers)]
        self.rope = {"rope_cos": _Buf(), "rope_sin": _Buf()}
        self.bufs = defaultdict(_Buf)

    def act(self, name: str, n: int, dtype: str | None = None) -> _Buf:
        return self.bufs[name]


class _Recorder:
    """A plan whose ops record the dims they are asked to launch at instead of binding them."""

    def __init__(self, plan: Plan):
        self.plan, self.seen = plan, []

    def __getattr__(self, name):
        return getattr(self.plan, name)

    def __getitem__(self, op: str):
        rec, kernel = self, self.plan[op]

        class _Op:
            op = kernel.op

            def launches(self, dims, pointers, scalars=None):
                rec.seen.append((op, kernel.op, dict(dims)))
                return []
        return _Op()

    def __contains__(self, op):
        return op in self.plan.ops


def contract_problem(plan: Plan, cfg: Qwen3Config, dtype: str, S: int, splits: int) -> str | None:
    """A sentence naming the first op whose contract the model's dims break (and the dims), or None."""
    rec, m = _Recorder(plan), _Model(cfg, dtype, S)
    L.decode(rec, m, splits)
    chunk = min(int(plan[op].op.dims["T"][1]) for op in ("gemm", "attention_prefill", "qk_norm_rope_prefill",
                                                           "embedding") if op in plan.ops)
    for T in sorted({1, min(chunk, S)}):
        L.prefill(rec, m, T, 0, False)
    for name, op, dims in rec.seen:
        why = op.dims_ok(dims)
        if why:
            return (f"op {name} does not take {', '.join(f'{k}={v}' for k, v in dims.items())}: "
                    f"{'; '.join(why)} (nothing was loaded)")
    return None


def decode_calls(plan: Plan, cfg: Qwen3Config, dtype: str, S: int, splits: int) -> list[tuple]:
    """Every op call of one decode step, every layer, in step order: (op name, Op, dims)."""
    rec = _Recorder(plan)
    L.decode(rec, _Model(cfg, dtype, S, layers=cfg.num_hidden_layers), splits)
    return rec.seen
