"""LaunchConfig: grid, block, dynamic shared bytes and launch attributes."""
from __future__ import annotations

from dataclasses import dataclass

PDL = "programmatic_stream_serialization"   # programmatic dependent launch (CUDA 12+, sm_90)
ATTRIBUTES = (PDL,)


def dim3(v) -> tuple[int, int, int]:
    v = (v,) if isinstance(v, int) or hasattr(v, "__index__") else tuple(v)
    out = tuple(int(x) for x in v) + (1,) * (3 - len(v))
    if len(out) != 3 or min(out) < 1:
        raise ValueError(f"bad launch dimension {v!r}: one to three positive integers")
    return out


@dataclass(frozen=True)
class LaunchConfig:
    """How to launch: `attributes` holds names from ATTRIBUTES. PDL lets the next kernel on the stream
    start before this one ends (it must wait with griddepcontrol.wait before reading what this one
    writes). On the GPU it goes through cuLaunchKernelEx; on the CPU launches run one after another
    anyway, so it changes nothing there."""
    grid: tuple[int, int, int] | int
    block: tuple[int, int, int] | int
    shared: int = 0
    attributes: frozenset[str] = frozenset()

    def __post_init__(self):
        object.__setattr__(self, "grid", dim3(self.grid))
        object.__setattr__(self, "block", dim3(self.block))
        object.__setattr__(self, "shared", int(self.shared))
        attrs = frozenset([self.attributes] if isinstance(self.attributes, str) else self.attributes)
        if attrs - set(ATTRIBUTES):
            raise ValueError(f"unknown launch attributes {sorted(attrs - set(ATTRIBUTES))} (known: {ATTRIBUTES})")
        object.__setattr__(self, "attributes", attrs)
        if self.shared < 0:
            raise ValueError(f"negative shared bytes {self.shared}")
