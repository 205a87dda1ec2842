"""Load the exact PTX and launch it: one object model for the CPU (kreg's PTX emulator) and the GPU.

    dev = runtime.device("cpu" | "gpu")
    mod = dev.load(ptx, sha256=proof_sha)          # Module; the sha256 of the bytes is checked
    k = mod.kernel("saxpy")                        # Kernel, params typed from the PTX
    x = dev.alloc(nbytes); x.copy_from(array)      # Buffer: .ptr, copy_from, copy_to
    k.launch(LaunchConfig(grid, block), x, np.float32(2), stream=s)
    graph = dev.capture(lambda s: k.launch(cfg, x, stream=s)); graph.replay(s); s.sync()
    lib = runtime.load_vendor(dev, "cublas", "bf16")  # a vendor variant's routines, launched the same way

Imports registry and checker only; the GPU backend (CuPy, cuda.bindings) is imported lazily."""
from .config import PDL, LaunchConfig
from .backends import device
from .device import Device
from .errors import ArgError, KernelNotFound, LaunchError, LoadError, ShaMismatch
from .graph import Graph
from .memory import Buffer
from .module import Kernel, Module
from .ptx import parsed, sha256
from .stream import Stream
from .vendor import VendorModule, load as load_vendor

__all__ = ["PDL", "LaunchConfig", "Device", "device", "ArgError", "KernelNotFound", "LaunchError", "LoadError",
           "ShaMismatch", "Graph", "Buffer", "Kernel", "Module", "parsed", "sha256", "Stream", "VendorModule", "load_vendor"]
