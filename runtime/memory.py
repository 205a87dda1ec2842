"""Buffer: one device allocation. `.ptr` is its address (what a kernel argument carries), `.array` a
flat uint8 array over it on the device (NumPy on the CPU, CuPy on the GPU)."""
from __future__ import annotations

import numpy as np


def raw(data) -> np.ndarray:
    return np.ascontiguousarray(data).reshape(-1).view(np.uint8)


class Buffer:
    def __init__(self, device, array, ptr: int, nbytes: int):
        self.device, self.array, self.ptr, self.nbytes = device, array, int(ptr), int(nbytes)

    def copy_from(self, data, offset: int = 0) -> Buffer:
        """Write the bytes of an array at `offset` (on the GPU through the default stream, which every
        stream but a non-blocking one waits for)."""
        b = raw(data)
        if offset < 0 or offset + b.size > self.nbytes:
            raise ValueError(f"writing {b.size} bytes at offset {offset} into a {self.nbytes}-byte buffer")
        self.device._write(self, offset, b)
        return self

    def copy_to(self, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """A host copy of the bytes [offset, offset + nbytes) as uint8 (synchronous; on the GPU it waits
        for the default stream and the streams ordered with it, not for non-blocking ones)."""
        nbytes = self.nbytes - offset if nbytes is None else nbytes
        if offset < 0 or nbytes < 0 or offset + nbytes > self.nbytes:
            raise ValueError(f"reading {nbytes} bytes at offset {offset} from a {self.nbytes}-byte buffer")
        return self.device._read(self, offset, nbytes)

    def __repr__(self):
        return f"Buffer({self.device.kind}, ptr={self.ptr:#x}, nbytes={self.nbytes})"
