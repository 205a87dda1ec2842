"""Vendor library routines behind the same Module / Kernel interface as loaded PTX, so conformance,
timing, graphs and the engine launch a `vendor` variant (registry/vendor.py) exactly as a kernel:
module.kernel(entry).launch(config, *args, stream=). cuBLAS through CuPy's bindings (cublasGemmEx, fp32
compute, default algorithm); the GPU only. The launch config is ignored: the library picks its own."""
from __future__ import annotations

import hashlib

import numpy as np

from kreg.checker.ptx import parse as P
from kreg.registry.vendor import ROUTINES, routine

from .errors import KernelNotFound, LaunchError, LoadError
from .ptx import typed

_CUDA_TYPE = {"bf16": 14, "f16": 2}          # cudaDataType: CUDA_R_16BF, CUDA_R_16F
_COMPUTE_32F, _GEMM_DEFAULT, _OP_N, _OP_T = 68, -1, 0, 1
_DISALLOW_REDUCED_PRECISION_REDUCTION = 16          # cublasMath_t CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION


def signature(library: str, op: str) -> list[P.Param]:
    """The routine's params as binding sees a kernel's: a u64 pointer per buffer, then an s32 per dim."""
    buffers, dims = ROUTINES[(library, op)]
    return [P.Param(b, "u64", 8, 8) for b in buffers] + [P.Param(d, "s32", 4, 4) for d in dims]


class VendorModule:
    """The routines of one library for one dtype binding, as a Module: `parsed` (params for binding) is
    the module itself; `sha256` names the library and its version, standing in for a PTX hash."""

    def __init__(self, device, library: str, dtype: str):
        if device.kind != "gpu":
            raise LoadError(f"{library} runs on the GPU only; this is the {device.kind}")
        if dtype not in _CUDA_TYPE:
            raise LoadError(f"{library}: no {dtype} routines")
        self.device, self.library, self.dtype = device, library, dtype
        self.version = _version(device, library)
        self.sha256 = hashlib.sha256(f"vendor:{library}:{self.version}".encode()).hexdigest()
        self.parsed = self
        self._kernels = {routine(lib, op): VendorKernel(self, routine(lib, op), op)
                         for lib, op in ROUTINES if lib == library}

    def kernel(self, entry: str) -> VendorKernel:
        if entry not in self._kernels:
            raise KernelNotFound(f"no routine {entry!r} in {self.library} (routines: {', '.join(self._kernels)})")
        return self._kernels[entry]

    def __repr__(self):
        return f"VendorModule({self.library} {self.version}, {self.dtype})"


class VendorKernel:
    def __init__(self, module: VendorModule, entry: str, op: str):
        self.module, self.entry, self.op = module, entry, op
        self.params = signature(module.library, op)

    def launch(self, config, *args, stream=None):
        """Run (or, while the stream captures, record) the routine on the stream."""
        stream = stream or self.module.device.default_stream
        vals = [int(a) for a in typed(self.entry, self.params, args)]
        try:
            with stream.handle:            # CuPy's cuBLAS calls run on the current stream
                _gemm(self.module.device.cp, self.module.dtype, self.op, vals)
        except Exception as e:
            raise LaunchError("launch", f"{self.entry}: {type(e).__name__}: {e}") from None


_ONE, _ZERO = np.ones(1, np.float32), np.zeros(1, np.float32)     # host alpha / beta, alive for the process


def _gemm(cp, dtype: str, op: str, v: list[int]) -> None:
    """Row-major y[N] = W[N, K] x[K] and Y[T, N] = X[T, K] W[N, K]^T as one column-major product:
    C[N, T] = op_T(W as K x N) . (X as K x T), fp32 accumulation, one rounding."""
    from cupy_backends.cuda.libs import cublas
    if op == "gemv":
        w, x, y, n, k = v
        t = 1
    else:
        x, w, y, t, n, k = v
    ct = _CUDA_TYPE[dtype]
    h = cp.cuda.device.get_cublas_handle()
    mode = cublas.getMathMode(h)
    # the op's contract is fp32 accumulation with one rounding: no split-K partials reduced in bf16/fp16
    # (cuBLAS's default; at K = 12288 it missed the tolerance on the H100)
    cublas.setMathMode(h, mode | _DISALLOW_REDUCED_PRECISION_REDUCTION)
    try:
        cublas.gemmEx(h, _OP_T, _OP_N, n, t, k, _ONE.ctypes.data, w, ct, k,
                      x, ct, k, _ZERO.ctypes.data, y, ct, n, _COMPUTE_32F, _GEMM_DEFAULT)
    finally:
        cublas.setMathMode(h, mode)


def _version(device, library: str) -> str:
    from cupy_backends.cuda.libs import cublas
    return f"cublas {cublas.getVersion(device.cp.cuda.device.get_cublas_handle())}"


def load(device, library: str, dtype: str) -> VendorModule:
    """The library's routines on this device (cached per device, library and dtype)."""
    cache = device.__dict__.setdefault("_vendor_modules", {})
    key = (library, dtype)
    if key not in cache:
        cache[key] = VendorModule(device, library, dtype)
    return cache[key]
