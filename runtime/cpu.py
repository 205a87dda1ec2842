"""The CPU backend: kreg's PTX emulator. Launches run at once, in order, on every stream; a graph is
the recorded list of launches, replayed in order."""
from __future__ import annotations

from kreg.checker.emulator import machine as E
from kreg.registry.limits import STEPS_CAP

from .device import Device
from .errors import LaunchError
from .memory import Buffer


class Cpu(Device):
    """Settings for the following launches: `trace = True` records every memory access
    (LaunchResult.accesses); `max_cost` bounds each launch's work (the step budget, registry/limits.py);
    `atomic_seed` applies colliding atomics in a seeded order, as a GPU may."""
    kind = "cpu"

    def __init__(self, max_cost: int = STEPS_CAP):
        self.mem = E.Memory()
        self.max_cost, self.trace, self.atomic_seed = max_cost, False, None
        super().__init__()

    def describe(self) -> str:
        return E.DEVICE_KIND

    def _load(self, ptx, digest):
        return None

    def _alloc(self, nbytes, name):
        addr = self.mem.alloc(nbytes, name=name)
        return Buffer(self, self.mem.view(addr), addr, nbytes)

    def _write(self, buf, offset, data):
        buf.array[offset:offset + data.size] = data

    def _read(self, buf, offset, nbytes):
        return buf.array[offset:offset + nbytes].copy()

    def _launch(self, kernel, config, args, stream):
        try:
            return E.launch(kernel.module.parsed, kernel.entry, config.grid, config.block, config.shared, args,
                            self.mem, max_cost=self.max_cost, trace=self.trace, atomic_seed=self.atomic_seed)
        except E.EmulatorError as e:
            kind = getattr(e, "kind", "error")
            what = f"did not finish within its budget of {self.max_cost}" if kind == "step-limit" else kind
            raise LaunchError(kind, f"{kernel.entry}: {what}: {e}") from None

    def _sync(self, stream):
        pass

    def _begin_capture(self, stream):
        stream.recording = []

    def _end_capture(self, stream):
        launches, stream.recording = stream.recording, None
        return launches

    def _replay(self, graph, stream):
        for kernel, config, args in graph.handle:
            stream.launch(kernel, config, args)

