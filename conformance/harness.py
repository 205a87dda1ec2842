"""The conformance harness: guarded buffers and checked launches on a runtime.Device (not a device of its
own), the CPU (kreg's PTX emulator) or the GPU, both through kreg.runtime (which loads the exact PTX and
launches it). A guarded buffer is one allocation of guard + data + guard bytes whose pointer is the data
start, so a write before or after a buffer lands in a guard that is checked afterwards."""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np

from kreg import runtime
from kreg.registry.limits import STEPS_CAP, step_budget

from kreg.checker.ptx.bind import BoundLaunch

# The kernel did not complete: a fault, a trap, an out-of-bounds access or a step limit (`kind` says which).
LaunchFailure = runtime.LaunchError


def config(bl: BoundLaunch) -> runtime.LaunchConfig:
    return runtime.LaunchConfig(bl.grid, bl.block, bl.shared)


@dataclass
class GuardedBuffer:
    """A buffer between two guard bands of a known pattern."""
    name: str
    nbytes: int
    guard: int
    handle: object          # the device's allocation
    base: int               # address of the allocation
    front: np.ndarray       # the pattern written in the guards
    back: np.ndarray

    @property
    def ptr(self) -> int:
        return self.base + self.guard


class Harness:
    """The operations conformance needs on one runtime.Device (`rt`): guarded buffers, launches, what a
    launch did to the guards, the references' array module. Subclasses: CpuHarness, GpuHarness."""
    name = "?"
    observe = False   # record every access during the next launches (where the device can)
    atomic_seed = None   # reorder colliding atomics by this seed in the next launches (where the device can)
    work_elements = 0    # elements of the current case's buffers (the CPU's step budget grows with it)
    guard = 1024   # bytes either side of every buffer; a multiple of 256 keeps pointers aligned

    def alloc(self, name: str, nbytes: int, rng: np.random.Generator) -> GuardedBuffer:
        from .inputs import pattern_bytes
        handle, base = self._alloc(nbytes + 2 * self.guard, name)
        front, back = pattern_bytes(self.guard, rng), pattern_bytes(self.guard, rng)
        buf = GuardedBuffer(name, nbytes, self.guard, handle, base, front, back)
        self.buffers.append(buf)
        self._write(handle, 0, front)
        self._write(handle, self.guard + nbytes, back)
        return buf

    def write(self, buf: GuardedBuffer, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if data.size != buf.nbytes:
            raise ValueError(f"{buf.name}: writing {data.size} bytes into a {buf.nbytes}-byte buffer")
        self._write(buf.handle, buf.guard, data)

    def read(self, buf: GuardedBuffer) -> np.ndarray:
        """The data bytes (a copy)."""
        return self._read_range(buf.handle, buf.guard, buf.nbytes).copy()

    def _read_range(self, handle, offset: int, nbytes: int) -> np.ndarray:
        return self._read(handle)[offset:offset + nbytes]

    def snapshot(self, buf: GuardedBuffer, data: np.ndarray):
        """What changed() compares the buffer with later, taken right after `data` was written to it."""
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)

    def changed(self, buf: GuardedBuffer, snap, dtype: np.dtype) -> np.ndarray:
        """Flat indices of the dtype's elements where the buffer's data differs from the snapshot."""
        return np.flatnonzero(self.read(buf).view(dtype) != snap.view(dtype))

    def guard_damage(self, buf: GuardedBuffer) -> list[str]:
        """What a kernel did to the guards: empty if both are untouched (only the guards are read)."""
        why = []
        for side, want, got, off in (("before", buf.front, self._read_range(buf.handle, 0, buf.guard), -buf.guard),
                                     ("after", buf.back, self._read_range(buf.handle, buf.guard + buf.nbytes,
                                                                          buf.guard), buf.nbytes)):
            bad = np.flatnonzero(got != want)
            if bad.size:
                lo, hi = int(bad[0]) + off, int(bad[-1]) + off
                why.append(f"{buf.name}: {bad.size} guard bytes {side} the buffer overwritten "
                           f"(byte offsets {lo}..{hi} relative to its start; it holds {buf.nbytes} bytes)")
        return why

    @property
    def buffers(self) -> list[GuardedBuffer]:
        return self.__dict__.setdefault("_buffers", [])

    def stray_accesses(self) -> list[str]:
        """Accesses the device observed outside their buffer's data since the last call (the CPU
        records every access; a GPU observes none, so only guard damage shows there)."""
        return []

    def load(self, ptx: str):
        raise NotImplementedError

    def load_variant(self, variant, op, ptx: str | None):
        """What the variant launches: its PTX, or for a vendor variant its library's routines."""
        if not variant.vendor:
            return self.load(ptx)
        dtype = op.dtype_of(variant.launches[0].args[0].param, variant.types)
        try:
            return runtime.load_vendor(self.rt, variant.library, dtype)
        except runtime.LoadError as e:
            raise LaunchFailure("load", str(e)) from None

    def launch(self, module, bl: BoundLaunch) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        pass

    @contextmanager
    def arrays(self):
        """The array module the float64 references compute in while the context is open: NumPy here."""
        yield np

    def to_host(self, arrays: dict) -> dict:
        """The references' outputs as NumPy arrays."""
        return arrays

    def describe(self) -> str:
        return self.name


class CpuHarness(Harness):
    """The PTX emulator (kreg.checker.emulator.machine) through kreg.runtime: every launch runs all threads on
    the CPU; with `observe` it records every access, and accesses into a guard are reported."""
    name = "cpu"

    def __init__(self, max_cost: int = STEPS_CAP):
        self.rt = runtime.device("cpu", max_cost=max_cost)
        self.max_cost = max_cost
        self._stray: list[str] = []

    @property
    def mem(self):
        return self.rt.mem

    def _alloc(self, nbytes, name):
        b = self.rt.alloc(nbytes, name)
        return b, b.ptr

    def _write(self, handle, offset, data):
        handle.copy_from(data, offset)

    def _read(self, handle):
        return handle.array

    def load(self, ptx: str):
        return self.rt.load(ptx)

    def launch(self, module, bl: BoundLaunch) -> None:
        threads = int(np.prod(bl.grid, dtype=np.int64)) * int(np.prod(bl.block, dtype=np.int64))
        budget = min(self.max_cost, step_budget(threads, self.work_elements))
        self.rt.trace, self.rt.atomic_seed, self.rt.max_cost = self.observe, self.atomic_seed, budget
        try:
            res = module.kernel(bl.entry).launch(config(bl), *bl.args)
        except LaunchFailure as e:
            if e.kind != "step-limit":
                raise
            raise LaunchFailure(e.kind, f"{e} (the budget for {threads} threads and {self.work_elements} "
                                "buffer elements)") from None
        if res.trace:
            self._stray += stray(bl.entry, res.trace, self.buffers)

    def stray_accesses(self) -> list[str]:
        out, self._stray = self._stray, []
        return out

    def describe(self) -> str:
        return self.rt.describe()


def stray(entry: str, trace, buffers: list[GuardedBuffer], limit: int = 3) -> list[str]:
    """Global accesses of a launch's trace (checker/emulator/trace.py) that touch a guard band: one
    sentence per buffer and kind, with the first offending thread."""
    import numpy as np
    from kreg.checker.emulator.trace import KINDS
    addr, width, kinds, access = trace.columns("global")
    if not addr.size or not buffers:
        return []
    end = addr + width
    out = []
    for b in buffers:
        lo_alloc, lo, hi = b.base, b.ptr, b.ptr + b.nbytes
        hit = (end > lo_alloc) & (addr < hi + b.guard) & ((addr < lo) | (end > hi))
        for code, kind in enumerate(KINDS):
            idx = np.flatnonzero(hit & (kinds == code))
            if idx.size:
                a = access(int(idx[0]))
                side = "before the start" if a.address < lo else "past the end"
                out.append(f"{entry}: {len(idx)} {kind}s {side} of {b.name} ({b.nbytes} bytes), first by block "
                           f"{a.block} thread {a.thread}: {a.width} bytes at offset {a.address - lo}")
    return out[:limit * len(buffers)]


class GpuHarness(Harness):
    """The current CUDA GPU through kreg.runtime; launches are synchronised so a fault is raised here.
    With a `turn` (kreg.isolate.Turn, shared by the processes using this GPU), every use of the GPU is
    taken as a turn, so that a variant being timed (speed.py holds the turn) has the GPU to itself while
    the host-side work of other variants' numerics goes on."""
    name = "gpu"
    guard = 4096

    def __init__(self, turn=None):
        self.rt = runtime.device("gpu")
        self.cp, self.device_name, self.l2_bytes = self.rt.cp, self.rt.name, self.rt.l2_bytes
        self.peak_bytes_per_s = self.rt.peak_bytes_per_s        # the DRAM's theoretical rate, or None
        self.turn = turn if turn is not None else nullcontext()

    def _alloc(self, nbytes, name):
        with self.turn:
            b = self.rt.alloc(nbytes, name)
        return b, b.ptr

    def _write(self, handle, offset, data):
        with self.turn:
            handle.copy_from(data, offset)
            self.rt.sync()

    def _read(self, handle):
        with self.turn:
            return handle.copy_to()

    def _read_range(self, handle, offset, nbytes):
        with self.turn:
            return handle.copy_to(offset, nbytes)

    def snapshot(self, buf, data):
        """A copy on the device (compared there: no transfer of the whole input back)."""
        with self.turn:
            snap = buf.handle.array[buf.guard:buf.guard + buf.nbytes].copy()
            self.rt.sync()
        return snap

    def changed(self, buf, snap, dtype):
        with self.turn:
            now = buf.handle.array[buf.guard:buf.guard + buf.nbytes]
            return self.cp.asnumpy(self.cp.flatnonzero(now.view(dtype) != snap.view(dtype)))

    def load(self, ptx: str):
        return self.rt.load(ptx)

    @contextmanager
    def arrays(self):
        """CuPy, in a turn (the GPU is the references' while a variant may be timed elsewhere); its memory
        pool is emptied afterwards."""
        with self.turn:
            try:
                yield self.cp
            finally:
                self.rt.sync()
                self.cp.get_default_memory_pool().free_all_blocks()

    def to_host(self, arrays: dict) -> dict:
        return {k: self.cp.asnumpy(a) if isinstance(a, self.cp.ndarray) else a for k, a in arrays.items()}

    def launch(self, module, bl: BoundLaunch) -> None:
        with self.turn:            # the launch and its end inside one turn
            module.kernel(bl.entry).launch(config(bl), *bl.args)
            self.rt.sync()

    def sync(self) -> None:
        with self.turn:
            self.rt.sync()

    def describe(self) -> str:
        return self.rt.describe()


def ptx_module(device: Harness, module):
    """The parsed PTX module of what device.load() returned (bind() needs its param types): a
    runtime.Module's `parsed`, or the module itself where a test double loads a parsed one."""
    return getattr(module, "parsed", module)


def open_harness(kind: str, turn=None) -> Harness:
    """The harness on the device of that name (cpu / gpu); raises RuntimeError saying why it is not available."""
    if kind == "cpu":
        try:
            return CpuHarness()
        except ImportError as e:
            raise RuntimeError(f"the CPU device needs kreg.checker.emulator.machine, which is not available ({e})") from None
    if kind == "gpu":
        try:
            return GpuHarness(turn)
        except Exception as e:
            raise RuntimeError(f"no usable GPU ({type(e).__name__}: {e})") from None
    raise RuntimeError(f"unknown device {kind!r} (cpu or gpu)")
