"""Open a device by kind: the CPU (kreg's PTX emulator) or the GPU (one per process, opened lazily)."""
from __future__ import annotations

from functools import cache

from .cpu import Cpu
from .device import Device


@cache
def _gpu():
    from .gpu import Gpu
    return Gpu()


def device(kind: str = "cpu", **options) -> Device:
    """Open a device by kind: "cpu" (options: max_cost) or "gpu"."""
    if kind == "cpu":
        return Cpu(**options)
    if kind == "gpu":
        return _gpu()
    raise ValueError(f"unknown device {kind!r} (cpu or gpu)")
