"""Module (the loaded PTX of one sha256 on one device) and Kernel (one entry of it)."""
from __future__ import annotations

from kreg.checker.ptx import parse as P

from .config import LaunchConfig
from .errors import KernelNotFound
from .ptx import typed


class Module:
    """The same kind of object on every device: `parsed` is the PTX IR (params, for binding),
    `handle` the device's own (None on the CPU, the CuPy module on the GPU)."""

    def __init__(self, device, ptx: str, sha256: str, parsed: P.Module, handle):
        self.device, self.ptx, self.sha256, self.parsed, self.handle = device, ptx, sha256, parsed, handle
        self._kernels: dict[str, Kernel] = {}

    @property
    def entries(self) -> list[str]:
        return list(self.parsed.kernels)

    def kernel(self, entry: str) -> Kernel:
        k = self._kernels.get(entry)
        if k is None:
            if entry not in self.parsed.kernels:
                raise KernelNotFound(f"no kernel {entry!r} in PTX {self.sha256[:12]} "
                                     f"(entries: {', '.join(self.entries) or 'none'})")
            k = self._kernels[entry] = Kernel(self, entry)
        return k

    def __repr__(self):
        return f"Module({self.device.kind}, sha256={self.sha256[:12]}, entries={self.entries})"


class Kernel:
    """One entry point; launch() types the arguments from its PTX params and hands them to the stream.
    `handle` is the device's function (None on the CPU), resolved here so that no module is loaded
    while a graph captures."""

    def __init__(self, module: Module, entry: str):
        self.module, self.entry = module, entry
        self.params = module.parsed.kernel(entry).params
        self.handle = module.device._function(module, entry)

    def launch(self, config: LaunchConfig, *args, stream=None):
        """Run (or, while the stream captures, record) one launch. Arguments: buffers (or anything with
        .ptr), NumPy scalars, Python numbers. On the CPU returns the emulator's LaunchResult."""
        stream = stream or self.module.device.default_stream
        return stream.launch(self, config, typed(self.entry, self.params, args))

    def __repr__(self):
        return f"Kernel({self.entry}, params={[p.type for p in self.params]})"
