"""Stream: launches in order. While a graph captures it, launches are recorded instead of run."""
from __future__ import annotations


class Stream:
    """`handle` is the device's stream (None on the CPU, a cupy.cuda.Stream on the GPU)."""

    def __init__(self, device, handle=None):
        self.device, self.handle = device, handle
        self.recording: list | None = None   # the CPU's capture: (kernel, config, args) in order

    def launch(self, kernel, config, args):
        if self.recording is not None:
            self.recording.append((kernel, config, args))
            return None
        return self.device._launch(kernel, config, args, self)

    def sync(self) -> None:
        self.device._sync(self)

    def __repr__(self):
        return f"Stream({self.device.kind})"
