"""The GPU backend: the exact PTX through CuPy (module, memory, streams, graph capture); launches with
attributes (PDL) through cuda.bindings' cuLaunchKernelEx. Imported only when a GPU is opened."""
from __future__ import annotations

import numpy as np

from kreg.registry.device_kind import DeviceKind

from .config import PDL
from .device import Device
from .errors import LaunchError, LoadError
from .memory import Buffer


class GpuModule:
    """The PTX text loaded through cupy.RawModule after checking the driver accepts its ISA."""

    def __init__(self, ptx: str):
        import cupy
        from kreg.checker.ptx.cache import exact_file
        from kreg.checker.ptx.compile import cache_dir, check_driver_accepts
        from kreg.checker.ptx.digest import ptx_digest
        check_driver_accepts(ptx, cupy.cuda.runtime.driverGetVersion())
        # CuPy reads the file lazily, so it is a file named by the sha256 it must match (checked)
        self.sha256 = ptx_digest(ptx)
        path = exact_file(cache_dir(), ptx)
        self._mod = cupy.RawModule(path=str(path))
        self._fns, self._shared = {}, {}

    def function(self, entry: str, shared: int = 0):
        fn = self._fns.get(entry)
        if fn is None:
            fn = self._fns[entry] = self._mod.get_function(entry)
            fn.kernel                                                # loads the module now
        if shared > self._shared.get(entry, 0):   # opt in: static + dynamic past 48 KiB needs it too
            fn.max_dynamic_shared_size_bytes = self._shared[entry] = shared
        return fn

    def launch(self, bl, stream=None) -> None:
        """bl: anything with entry, grid, block, shared and args (typed NumPy scalars)."""
        self.function(bl.entry, bl.shared)(bl.grid, bl.block, bl.args, shared_mem=bl.shared, stream=stream)


def launch_ex(fn, config, args, stream_ptr: int) -> None:
    """cuLaunchKernelEx with the config's attributes; fn is a cupy RawKernel (fn.kernel.ptr: its CUfunction)."""
    from cuda.bindings import driver as drv
    cfg = drv.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = config.grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = config.block
    cfg.sharedMemBytes = config.shared
    cfg.hStream = drv.CUstream(stream_ptr)
    attrs = []
    if PDL in config.attributes:
        a = drv.CUlaunchAttribute()
        a.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        a.value.programmaticStreamSerializationAllowed = 1
        attrs.append(a)
    cfg.attrs, cfg.numAttrs = attrs, len(attrs)
    values = [np.array([a]) for a in args]                       # kept alive through the call
    ptrs = np.array([v.ctypes.data for v in values], dtype=np.uint64)
    (err,) = drv.cuLaunchKernelEx(cfg, drv.CUfunction(int(fn.kernel.ptr)), int(ptrs.ctypes.data), 0)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuLaunchKernelEx: {err.name}")


def _dram_peak(cupy) -> float | None:
    """The DRAM's theoretical bytes/s: memory clock (kHz) x bus width (bits) x 2 (double data rate) / 8,
    from the device attributes (CUDA 13 dropped them from cudaDeviceProp); None where unreported."""
    rt, dev = cupy.cuda.runtime, cupy.cuda.Device().id
    try:
        khz, bits = rt.deviceGetAttribute(36, dev), rt.deviceGetAttribute(37, dev)   # MemoryClockRate, BusWidth
    except Exception:               # noqa: BLE001 - any failure means "unknown", never a wrong figure
        return None
    return 2.0 * khz * 1e3 * bits / 8 if khz > 0 and bits > 0 else None


class Gpu(Device):
    """The current CUDA device. `cp` is CuPy, for callers that time with its events."""
    kind = "gpu"

    def __init__(self):
        import cupy
        self.cp = cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        self.name = props["name"].decode()
        self.l2_bytes = int(props.get("l2CacheSize", 50 << 20))
        self.peak_bytes_per_s = _dram_peak(cupy)
        self.driver_version = cupy.cuda.runtime.driverGetVersion()
        super().__init__()

    def describe(self) -> str:
        return str(DeviceKind.gpu(self.name, self.driver_version))

    def _default_stream_handle(self):
        return self.cp.cuda.Stream.null

    def _new_stream_handle(self, non_blocking):
        return self.cp.cuda.Stream(non_blocking=non_blocking)

    def _load(self, ptx, digest):
        try:
            return GpuModule(ptx)
        except Exception as e:
            raise LoadError(f"cannot load PTX {digest[:12]} on {self.describe()}: {type(e).__name__}: {e}") from e

    def _function(self, module, entry):
        return module.handle.function(entry)

    def _alloc(self, nbytes, name):
        arr = self.cp.empty(nbytes, dtype=self.cp.uint8)
        return Buffer(self, arr, arr.data.ptr, nbytes)

    def _write(self, buf, offset, data):
        buf.array[offset:offset + data.size].set(data)

    def _read(self, buf, offset, nbytes):
        return self.cp.asnumpy(buf.array[offset:offset + nbytes])

    def _launch(self, kernel, config, args, stream):
        try:
            fn = kernel.handle if not config.shared else kernel.module.handle.function(kernel.entry, config.shared)
            if config.attributes:
                launch_ex(fn, config, args, stream.handle.ptr)
            else:
                fn(config.grid, config.block, args, shared_mem=config.shared, stream=stream.handle)
        except Exception as e:
            raise LaunchError("launch", f"{kernel.entry}: launch failed: {type(e).__name__}: {e}") from None

    def _sync(self, stream):
        try:
            (stream.handle if stream is not None else self.cp.cuda.Device()).synchronize()
        except Exception as e:
            raise LaunchError("fault", f"the kernel faulted: {type(e).__name__}: {e}") from None

    def _begin_capture(self, stream):
        stream.handle.begin_capture()

    def _end_capture(self, stream):
        return stream.handle.end_capture()

    def _replay(self, graph, stream):
        graph.handle.launch(stream.handle)
