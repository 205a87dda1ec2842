"""Device: where PTX is loaded, memory allocated and kernels launched. `device("cpu")` opens a fresh
emulator with its own memory; `device("gpu")` the current CUDA GPU (one object per process)."""
from __future__ import annotations


from kreg.checker.ptx import toolchain

from .errors import LoadError, ShaMismatch
from .graph import Graph
from .module import Module
from .ptx import parsed, sha256 as sha256_of, text
from .stream import Stream


class Device:
    """Backends (cpu.Cpu, gpu.Gpu) implement _load, _alloc, _write, _read, _launch, _sync and the
    capture hooks; everything else is shared."""
    kind = "?"

    def __init__(self):
        self._modules: dict[str, Module] = {}   # by sha256
        self.default_stream = Stream(self, self._default_stream_handle())

    def load(self, ptx: str | bytes, sha256: str | None = None) -> Module:
        """The module of this PTX (cached by its sha256). With `sha256`, the bytes must hash to it."""
        ptx = text(ptx)
        digest = sha256_of(ptx)
        if sha256 is not None and sha256.lower() != digest:
            raise ShaMismatch(f"PTX sha256 is {digest}, not {sha256.lower()} as named: these are not the "
                              "bytes that were proven")
        mod = self._modules.get(digest)
        if mod is None:
            try:
                ir = parsed(ptx)
            except Exception as e:
                raise LoadError(f"cannot parse PTX {digest[:12]}: {e}") from e
            hazards = toolchain.hazards(ir)     # the GPU would run other code than this PTX: refused everywhere
            if hazards:
                raise LoadError(f"refused PTX {digest[:12]}: toolchain hazard: {'; '.join(hazards)}")
            mod = self._modules[digest] = Module(self, ptx, digest, ir, self._load(ptx, digest))
        return mod

    def alloc(self, nbytes: int, name: str = ""):
        """A Buffer of nbytes (contents undefined; zero on the CPU)."""
        if nbytes < 0:
            raise ValueError(f"negative size {nbytes}")
        return self._alloc(int(nbytes), name)

    def stream(self, non_blocking: bool = False) -> Stream:
        """A new stream. By default it is ordered with the default stream, which Buffer copies use (a
        copy, then a launch here, then a copy back need no sync in between); non_blocking=True drops
        that ordering (the GPU's cudaStreamNonBlocking)."""
        return Stream(self, self._new_stream_handle(non_blocking))

    def sync(self) -> None:
        self._sync(None)

    def capture(self, fn=None) -> Graph:
        """A graph of the launches fn(stream) makes on the stream it is given; without fn, a Graph to
        use as a context manager (launch on graph.stream inside it)."""
        g = Graph(self)
        if fn is not None:
            with g:
                fn(g.stream)
        return g

    def _function(self, module, entry):
        return None

    def _default_stream_handle(self):
        return None

    def _new_stream_handle(self, non_blocking):
        return None

    def __repr__(self):
        return f"Device({self.describe()})"

    def describe(self) -> str:
        return self.kind
