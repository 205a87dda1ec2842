"""Graph: a captured sequence of launches, replayed as a whole. Replay reads the buffers' contents at
replay time, so new inputs written into the same buffers give new outputs."""
from __future__ import annotations


class Graph:
    """Use as `dev.capture(fn)` (fn(stream) launches on the stream it is given) or as
    `with dev.capture() as g: k.launch(cfg, ..., stream=g.stream)`; then `g.replay(stream)`."""

    def __init__(self, device):
        # captured on a stream of its own, unordered with the default stream (which no capture may touch)
        self.device, self.stream, self.handle = device, device.stream(non_blocking=True), None

    def __enter__(self) -> Graph:
        self.device._begin_capture(self.stream)
        return self

    def __exit__(self, *exc):
        self.handle = self.device._end_capture(self.stream)
        return False

    def replay(self, stream=None) -> None:
        if self.handle is None:
            raise RuntimeError("graph not captured yet (use it as a context manager or pass a function)")
        self.device._replay(self, stream or self.device.default_stream)

    def __repr__(self):
        return f"Graph({self.device.kind}, captured={self.handle is not None})"
