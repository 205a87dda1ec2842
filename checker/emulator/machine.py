"""The CPU device: runs a PTX kernel launch with NumPy, vectorised over every thread of a batch of
blocks. SIMT with a PC per thread: each step issues the instruction at the lowest PC to every runnable
thread there, so threads that diverged run separately and reconverge as soon as the lagging ones reach
the others' PC (for forward branches: at the join, the immediate post-dominator; after a loop: at its
exit). As on Volta and later (independent thread scheduling), warp-synchronous instructions
(shfl.sync, vote.sync, match.sync, redux.sync, bar.warp.sync) wait until every live lane of their member
mask has arrived, and bar.sync waits until every live thread of the block has arrived (exited threads
count as arrived); results therefore do not depend on where divergent paths happen to reconverge.
Global memory is a set of named byte allocations; shared memory is per block, local memory per thread.
Out-of-bounds or misaligned accesses, deadlocks and runaway loops stop the launch with an EmulatorError
naming the thread, block, instruction and address; the host's memory is never touched. Fast paths
make the same steps in the same order (docs/architecture.md): a converged batch (every thread runnable
at one PC) issues without per-thread PCs; a minority of threads alone at the lowest PC runs compacted
until the batch would issue to others too; independent batches of a launch run together."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from kreg.checker.ptx import parse as P
from kreg.checker.emulator import alu, memory, sync, tensor, wgmma  # noqa: F401 (register their handlers in ALU)
from kreg.checker.emulator.independence import independent
from kreg.checker.emulator.registers import Gathered, Registers
from kreg.checker.emulator.trace import Access, AccessTrace  # noqa: F401 (Access: E.Access)
from kreg.checker.emulator.ops import ALU, CLUSTER_SHIFT, DT, LOCAL_BASE, SHARED_BASE, STORE, EmulatorError, EmuOpsMixin
from kreg.registry.device_kind import DeviceKind
from kreg.registry.limits import BATCH_STEPS, SHARED_MAX_BYTES, STEP_THREADS, geometry_problems

VERSION = "emu-3"               # the CPU device kind results are stored under: bump when semantics change
DEVICE_KIND = str(DeviceKind.cpu(VERSION))
BATCH_THREADS = 1 << 15          # threads emulated at once (whole blocks)
SHARED_WINDOW, LOCAL_WINDOW = SHARED_BASE, LOCAL_BASE
WINDOW_SIZE = 1 << 32
CLUSTER_MAX = 16                 # blocks in a thread-block cluster (16: the non-portable size)
GLOBAL_BASE = 0x0000_7F00_0000_0000
GAP = 1 << 16                    # unmapped bytes between allocations
FAST_PATHS = True                # False: every step through the per-thread PCs and masks (the tests' yardstick)
COMPACT_MIN = 256                # a batch of at least this many threads runs a minority at one PC
COMPACT_RATIO = 2                # (at most 1 / COMPACT_RATIO of them) compacted: _Machine._compact
COMPACT_OPS = {n for n, h in ALU.items() if h.__module__.endswith(".alu")} | {
    "ld", "ldu", "st", "atom", "red", "mapa", "bra", "ret", "exit", "trap", "membar", "fence", "nanosleep",
    "prefetch", "prefetchu", "griddepcontrol", "dp4a", "dp2a", "isspacep"}
PURE_OPS = COMPACT_OPS - {"bra", "ret", "exit"}    # touch no PC, exit or wait state (_uniform_step)
MERGE_BATCHES = 4                # batches of a launch run together where independent (_launch_merged),
MERGE_BYTES = 1 << 29            # fewer where all their registers would pass this many bytes
MERGE_OPS = (PURE_OPS - {"atom", "red", "mapa"}) | {"bra", "ret", "exit", "bar", "barrier", "shfl", "vote", "redux",
                                                     "match", "activemask"}
SCALAR_OPS = ({n for n, h in ALU.items() if h.__module__.endswith(".alu")}
              | {"ld", "ldu", "st", "shfl"})   # their handlers take a register held as one value (registers.py)
WARP_UNIFORM = {"shfl", "vote", "redux", "match", "activemask"}   # issued by _uniform_step too (whole warps)
WARP_SYNC = {"shfl", "vote", "redux", "match", "activemask", "mma", "ldmatrix", "wgmma", "setmaxnreg"}   # wgmma, setmaxnreg: the warpgroup's 128 threads


@dataclass
class _Alloc:
    start: int
    size: int
    name: str
    data: np.ndarray      # uint8, padded to a multiple of 16


class Memory:
    """Global memory: named allocations in one 64-bit address space, separated by unmapped gaps."""

    def __init__(self):
        self.allocs: list[_Alloc] = []
        self._next = GLOBAL_BASE
        self._starts = np.zeros(0, np.uint64)
        self._ends = np.zeros(0, np.uint64)

    def alloc(self, nbytes: int, name: str = "", align: int = 256) -> int:
        align = max(int(align), 16)
        start = -(-self._next // align) * align
        nbytes = int(nbytes)
        self.allocs.append(_Alloc(start, nbytes, name or f"alloc{len(self.allocs)}",
                                  np.zeros(-(-max(nbytes, 1) // 16) * 16, np.uint8)))
        self._next = start + max(nbytes, 1) + GAP
        self._starts = np.array([a.start for a in self.allocs], np.uint64)
        self._ends = np.array([a.start + a.size for a in self.allocs], np.uint64)
        return start

    def _find(self, addr: int) -> _Alloc:
        for a in self.allocs:
            if a.start <= addr < a.start + max(a.size, 1):
                return a
        raise EmulatorError("out-of-bounds", "host access outside every allocation", address=addr,
                            buffer=self.nearest(addr))

    def view(self, addr: int) -> np.ndarray:
        a = self._find(addr)
        return a.data[addr - a.start:a.size]

    def write(self, addr: int, data) -> None:
        raw = np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
            else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        a = self._find(addr)
        off = addr - a.start
        if off + raw.size > a.size:
            raise EmulatorError("out-of-bounds", f"host write of {raw.size} bytes past the end of {a.name!r}",
                                address=addr, buffer=a.name)
        a.data[off:off + raw.size] = raw

    def read(self, addr: int, nbytes: int) -> bytes:
        a = self._find(addr)
        off = addr - a.start
        if off + nbytes > a.size:
            raise EmulatorError("out-of-bounds", f"host read of {nbytes} bytes past the end of {a.name!r}",
                                address=addr, buffer=a.name)
        return a.data[off:off + nbytes].tobytes()

    def nearest(self, addr: int) -> str | None:
        if not self.allocs:
            return None
        return min(self.allocs, key=lambda a: 0 if a.start <= addr < a.start + a.size
                   else min(abs(addr - a.start), abs(addr - (a.start + a.size)))).name

    def locate(self, addrs: np.ndarray, nbytes: int):
        """Allocation index of each address whose [addr, addr+nbytes) lies inside one allocation; -1 if none."""
        k = np.searchsorted(self._starts, addrs, side="right").astype(np.int64) - 1
        ok = k >= 0
        kk = np.where(ok, k, 0)
        ok &= addrs + np.uint64(nbytes) <= self._ends[kk] if len(self.allocs) else False
        return np.where(ok, k, -1)


@dataclass
class LaunchResult:
    steps: int                   # issue steps: one instruction issued to every runnable thread at the lowest PC
    thread_instructions: int     # instructions executed, summed over threads (predicated-off ones included)
    trace: AccessTrace | None = None   # with trace=True: every access, as recorded
    cost: int = 0                # what the step budget counts: each issue step 1 + threads // STEP_THREADS,
                                 # each batch of blocks BATCH_STEPS (about proportional to the time taken)

    @property
    def accesses(self) -> list[Access] | None:
        """The traced accesses (None untraced), one per thread and access, in launch order."""
        return None if self.trace is None else self.trace.accesses()


def _layout_shared(k: P.Kernel, module: P.Module, dynamic: int):
    """Offsets of the static shared variables, then the extern (dynamic) ones; total bytes."""
    offs, pos = {}, 0
    vars_ = [v for v in list(module.globals.values()) + list(k.locals.values()) if v.space == "shared"]
    for v in vars_:
        if not v.extern and v.count is not None:
            pos = -(-pos // v.align) * v.align
            offs[v.name] = pos
            pos += v.size
    static = pos
    dyn_start = -(-static // 16) * 16
    for v in vars_:
        if v.name not in offs:
            offs[v.name] = -(-dyn_start // v.align) * v.align
    return offs, (dyn_start + dynamic if dynamic else static)


def _pack_params(k: P.Kernel, args) -> tuple[bytes, dict[str, int]]:
    if len(args) != len(k.params):
        raise EmulatorError("unsupported", f"{k.name} takes {len(k.params)} params but {len(args)} args were given")
    blob, offs = bytearray(), {}
    for p, a in zip(k.params, args):
        pad = -len(blob) % p.align
        blob += b"\0" * pad
        offs[p.name] = len(blob)
        if isinstance(a, np.generic):
            raw = a.tobytes()
        elif isinstance(a, float) or (p.type in ("f32", "f64") and not isinstance(a, (bytes, bytearray))):
            raw = np.array(a, DT[p.type]).tobytes()
        elif isinstance(a, (bytes, bytearray)):
            raw = bytes(a)
        else:
            raw = (int(a) & ((1 << (8 * p.size)) - 1)).to_bytes(p.size, "little")
        if len(raw) != p.size:
            if isinstance(a, np.generic) and a.dtype.kind in "iu" and len(raw) < p.size:
                raw = (int(a) & ((1 << (8 * p.size)) - 1)).to_bytes(p.size, "little")
            else:
                raise EmulatorError("unsupported", f"argument for {p.name} is {len(raw)} bytes, the param is {p.size}")
        blob += raw
    return bytes(blob), offs


def _dim3(v) -> tuple[int, int, int]:
    v = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
    v = tuple(int(x) for x in v) + (1,) * (3 - len(v))
    if len(v) != 3 or min(v) < 1:
        raise ValueError(f"bad launch dimension {v}")
    return v


def launch(module, entry: str, grid, block, shared: int, args, mem: Memory, *, trace: bool = False,
           max_steps: int = 50_000_000, max_cost: int | None = None, max_trace: int | None = None,
           atomic_seed: int | None = None, strict_barriers: bool = False) -> LaunchResult:
    """Run one kernel launch on the CPU. module: ptx.Module or PTX text; args: one per .param.
    max_steps bounds the issue steps of the whole launch, max_cost its cost (LaunchResult.cost: the
    step budget, registry/limits.py), max_trace the traced per-thread accesses; beyond any, a
    step-limit error. atomic_seed: None applies the atomics of colliding lanes in thread order; a seed
    applies them in a seeded random order (as a GPU may), so results that depend on the order of
    atomics differ between launches. strict_barriers: a block barrier released while some thread of
    the block has exited is a barrier-divergence error (the prover's rule; by default, as on the GPU,
    exited threads count as arrived)."""
    if isinstance(module, str):
        module = _parsed(module)
    k = module.kernel(entry)
    grid, block = _dim3(grid), _dim3(block)
    tpb = block[0] * block[1] * block[2]
    why = geometry_problems(grid, block, int(shared))
    if why:
        raise EmulatorError("launch-limits", f"grid {grid} block {block} shared {int(shared)}: {'; '.join(why)}")
    params, poffs = _pack_params(k, args)
    gaddr = _module_globals(module, mem)
    soffs, ssize = _layout_shared(k, module, int(shared))
    if ssize > SHARED_MAX_BYTES:
        raise EmulatorError("launch-limits", f"{ssize} bytes of shared memory per block (static and dynamic) "
                            f"exceed the limit of {SHARED_MAX_BYTES}")
    lsize = 0
    loffs = {}
    for v in k.locals.values():
        if v.space == "local":
            lsize = -(-lsize // v.align) * v.align
            loffs[v.name] = lsize
            lsize += v.size
    code, compactable, dtypes = _decode(k), _compactable(k), None
    scalar_ok = [ins.op in SCALAR_OPS for ins in k.instrs] + [False]
    pure = [ins.op in PURE_OPS or ins.op in WARP_UNIFORM or ins.op == "bra" or _block_barrier(ins)
            for ins in k.instrs] + [False]
    nblocks = grid[0] * grid[1] * grid[2]
    cluster = _dim3(k.directives.get("reqnctapercluster", (1, 1, 1)))
    csize = cluster[0] * cluster[1] * cluster[2]
    if any(g % c for g, c in zip(grid, cluster)) or csize > CLUSTER_MAX:
        raise EmulatorError("launch-limits", f"grid {grid} is not a whole number of clusters {cluster} "
                            f"(at most {CLUSTER_MAX} blocks)")
    order = _cluster_order(grid, cluster) if csize > 1 else None       # None: blocks in order, never listed
    per_batch = max(1, BATCH_THREADS // tpb)
    per_batch = max(csize, per_batch // csize * csize)          # whole clusters run together
    merge = min(MERGE_BATCHES, MERGE_BYTES // max(1, per_batch * tpb * sum(
        STORE[P.TYPES[t]]().itemsize if t != "pred" and P.TYPES[t] in STORE else 1 for t in k.regs.values())))
    if (FAST_PATHS and merge > 1 and not trace and atomic_seed is None and not strict_barriers and csize == 1
            and nblocks > per_batch and _mergeable(k)):
        saved = {}
        try:
            return _launch_merged(k, (code, compactable, pure, scalar_ok), mem, grid, block, nblocks, per_batch,
                                  merge, params, poffs, gaddr, soffs, ssize, int(shared), loffs, lsize, max_steps, max_cost,
                                  saved)
        except (EmulatorError, _Dependent):
            for i, data in saved.items():          # back to the memory before the launch: run it batch by batch
                mem.allocs[i].data[:] = data
    res = LaunchResult(0, 0, AccessTrace() if trace else None)
    for b0 in range(0, nblocks, per_batch):
        res.cost += BATCH_STEPS
        if max_cost is not None and res.cost > max_cost:
            raise EmulatorError("step-limit", f"step budget exceeded (an infinite loop?): {max_cost} spent after "
                                f"{b0} of {nblocks} blocks")
        blocks = order[b0:b0 + per_batch] if order is not None else np.arange(b0, min(nblocks, b0 + per_batch))
        dtypes = dtypes if dtypes is not None else _register_dtypes(k)
        m = _Machine(k, code, mem, grid, block, blocks, params, poffs, gaddr, soffs, ssize, int(shared),
                     loffs, lsize, trace, max_steps - res.steps, cluster, dtypes)
        m.compactable, m.pure, m.scalar_ok = compactable, pure, scalar_ok
        m.cost_left = None if max_cost is None else max_cost - res.cost
        m.trace_left = None if max_trace is None else max_trace - len(res.trace or ())
        m.atomic_rng = None if atomic_seed is None else np.random.default_rng([atomic_seed, b0])
        m.strict_barriers = strict_barriers
        m.run()
        res.steps += m.steps
        res.thread_instructions += m.thread_instructions
        res.cost += m.cost
        if trace:
            res.trace.add(m.cta, m.tidx, m._trace)
    return res


class _Dependent(Exception):
    """Batches run together touched each other's memory, or a budget or error needs the batch order."""


def _mergeable(k: P.Kernel) -> bool:
    """May batches of this kernel's blocks run together (_launch_merged)? Not with atomics (their order
    across batches), clocks (they count a batch's steps), clusters, async copies or tensor cores."""
    for ins in k.instrs:
        if ins.op not in MERGE_OPS or any("cluster" in x for x in ins.mods):
            return False
        if any(isinstance(a, P.Special) and a.name in P.CLOCKS for a in ins.args):
            return False
    return True


def _launch_merged(k, decoded, mem, grid, block, nblocks, per_batch, merge, params, poffs, gaddr, soffs, ssize, dyn,
                   loffs, lsize, max_steps, max_cost, saved) -> LaunchResult:
    """launch() with `merge` batches at a time in one machine: each batch makes the same steps as
    alone (counted per batch: the same steps and cost), so the result is the same as batch by batch
    as long as no batch touches memory another one of its group writes (checked after each group;
    then _Dependent). A budget exceeded or an error also raises, for launch() to run batch by batch
    from the saved memory (saved: allocation index -> its bytes before the launch's first write)."""
    tpb = block[0] * block[1] * block[2]
    code, compactable, pure, scalar_ok = decoded
    res = LaunchResult(0, 0, None)
    dtypes = _register_dtypes(k)
    group = per_batch * merge
    for g0 in range(0, nblocks, group):
        nb = min(group, nblocks - g0)
        res.cost += BATCH_STEPS * -(-nb // per_batch)
        if max_cost is not None and res.cost > max_cost:
            raise _Dependent("budget")
        m = _Machine(k, code, mem, grid, block, np.arange(g0, g0 + nb), params, poffs, gaddr, soffs, ssize, dyn,
                     loffs, lsize, False, max_steps - res.steps, (1, 1, 1), dtypes)
        m.compactable, m.pure, m.scalar_ok = compactable, pure, scalar_ok
        m.cost_left = None if max_cost is None else max_cost - res.cost
        m.batches(per_batch * tpb, saved)
        m.run()
        if not independent(m.gaccess):
            raise _Dependent("memory")
        res.steps += m.steps
        res.thread_instructions += m.thread_instructions
        res.cost += m.cost
    return res


def _cluster_order(grid, cluster) -> np.ndarray:
    """Linear block ids (x fastest) grouped by thread-block cluster, each cluster's blocks in rank order
    (x fastest within the cluster); without clusters (1, 1, 1) simply 0, 1, 2, .. (launch() then makes each
    batch's ids itself: a grid of 2^31 blocks must not be listed)."""
    (gx, gy, gz), (cx, cy, cz) = grid, cluster
    r = np.arange(cx * cy * cz)
    rx, ry, rz = r % cx, r // cx % cy, r // (cx * cy)
    c = np.arange((gx // cx) * (gy // cy) * (gz // cz))
    kx, ky, kz = c % (gx // cx), c // (gx // cx) % (gy // cy), c // ((gx // cx) * (gy // cy))
    x, y, z = (kx[:, None] * cx + rx), (ky[:, None] * cy + ry), (kz[:, None] * cz + rz)
    return (x + gx * (y + gy * z)).reshape(-1)


@lru_cache(maxsize=32)
def _parsed(text: str) -> P.Module:
    return P.parse(text)


def run_bound(module, bound, mem: Memory, **kw) -> LaunchResult:
    """Run a conformance BoundLaunch (entry, grid, block, shared, args)."""
    return launch(module, bound.entry, bound.grid, bound.block, bound.shared, bound.args, mem, **kw)


def _module_globals(module: P.Module, mem: Memory) -> dict[str, int]:
    """Allocate (once per Memory) the module's .global and .const variables, initialised."""
    cache = mem.__dict__.setdefault("_module_vars", {})
    out = {}
    for v in module.globals.values():
        if v.space not in ("global", "const"):
            continue
        key = v.name            # one module's variables per Memory, kept across launches as on a GPU
        if key not in cache:
            addr = mem.alloc(max(v.size, 1), v.name, max(v.align, 16))
            if v.init:
                mem.write(addr, v.init)
            cache[key] = addr
        out[v.name] = cache[key]
    return out


def _block_barrier(ins) -> bool:
    """bar.sync 0 / barrier.sync 0 (or without an operand): the barrier of the whole block."""
    return (ins.op in ("bar", "barrier") and not ins.has("warp", "red", "cluster", "arrive") and len(ins.args) < 2
            and (not ins.args or isinstance(ins.args[0], P.Imm) and int(ins.args[0].value) == 0))


def _compactable(k: P.Kernel) -> list[bool]:
    """Per instruction: may a compacted sub-run (_Machine._compact) issue it? Those that touch only the
    executing threads' own state and memory: not barriers, warp-synchronous, tensor-core, async-copy or
    shared::cluster instructions."""
    return [ins.op in COMPACT_OPS and "shared::cluster" not in ins.mods for ins in k.instrs] + [True]


def _decode(k: P.Kernel):
    """Resolve each instruction's handler up front: an instruction the emulator cannot run is an error
    naming it and its line before anything executes."""
    code = []
    for ins in k.instrs:
        h = ALU.get(ins.op)
        if h is None:
            raise EmulatorError("unsupported", f"instruction {ins.op!r} is not emulated", instr=ins)
        code.append(h)
    return code


@lru_cache(maxsize=8)
def _layout(nb: int, block: tuple):
    """Per thread of a batch of nb blocks (read-only, shared by the batches of a launch): index, block in
    the batch, index in the block, tid (3 x N), lane, warp in the batch."""
    tpb = block[0] * block[1] * block[2]
    t = np.arange(nb * tpb)
    blk, local = t // tpb, t % tpb
    tidx = np.stack([local % block[0], local // block[0] % block[1], local // (block[0] * block[1])])
    lane = (local % 32).astype(np.uint32)
    warp = blk * -(-tpb // 32) + local // 32
    for a in (t, blk, local, tidx, lane, warp):
        a.flags.writeable = False
    return t, blk, local, tidx, lane, warp


def _register_dtypes(k: P.Kernel) -> dict:
    """The storage dtype of each register (an error for a type the emulator has no storage for)."""
    dtypes = {}
    for name, typ in k.regs.items():
        if typ != "pred" and P.TYPES[typ] not in STORE:
            raise EmulatorError("unsupported", f"register {name} of type .{typ}")
        dtypes[name] = np.dtype(STORE[P.TYPES[typ]] if typ != "pred" else bool)
    return dtypes


_PER_THREAD = ("blk", "pc", "alive")                                # gathered for a sub-run
_LAZY = ("lrow", "crank", "cbase", "lane", "warp", "tidx", "cta", "cpos", "wsync")   # gathered if used
_IDLE = ("carr", "cneed", "cwait", "bwait", "swait", "wpos")        # what the instructions of a sub-run never use


class _Machine(EmuOpsMixin):
    def __init__(self, k, code, mem, grid, block, blocks, params, poffs, gaddr, soffs, ssize, dyn, loffs,
                 lsize, trace, max_steps, cluster, dtypes):
        self.k, self.code, self.mem, self.grid, self.block = k, code, mem, grid, block
        self.params, self.poffs, self.gaddr, self.soffs, self.ssize = params, poffs, gaddr, soffs, ssize
        self.dyn, self.loffs, self.lsize, self.trace, self.max_steps = dyn, loffs, lsize, trace, max_steps
        tpb = block[0] * block[1] * block[2]
        nb = len(blocks)
        self.tpb, self.nb, self.N = tpb, nb, nb * tpb
        self.batch_n = self.N         # threads of the batch (N: of a compacted sub-run, fewer)
        t, self.blk, _, self.tidx, self.lane, self.warp = _layout(nb, block)
        self.lrow = t                 # each thread's row of local memory
        self.gid = None               # a compacted sub-run's thread indices in the batch (_compact)
        lin = blocks[self.blk]
        self.block_ids = blocks
        if grid[1] == grid[2] == 1:       # (the same values, without the divisions)
            self.cta = np.stack([lin, np.zeros_like(lin), np.zeros_like(lin)])
        else:
            self.cta = np.stack([lin % grid[0], lin // grid[0] % grid[1], lin // (grid[0] * grid[1])])
        # thread-block clusters: a thread's block's position in its cluster, rank (x fastest), and the
        # batch index of its cluster's rank-0 block (a batch holds whole clusters in rank order)
        self.cluster, self.csize = cluster, cluster[0] * cluster[1] * cluster[2]
        if self.csize == 1:
            self.cpos = np.zeros_like(self.cta)
            self.crank = np.zeros(self.N, np.int64)
            self.cbase = self.blk
        else:
            self.cpos = np.stack([self.cta[d] % cluster[d] for d in range(3)])
            self.crank = (self.cpos[0] + cluster[0] * (self.cpos[1] + cluster[1] * self.cpos[2])).astype(np.int64)
            self.cbase = self.blk - self.crank
        self.carr = np.zeros(self.N, np.int64)        # barrier.cluster.arrive count of each thread
        self.cneed = np.zeros(self.N, np.int64)       # the arrive count a thread in barrier.cluster.wait awaits
        self.cwait = np.zeros(self.N, bool)
        self.wpb = -(-tpb // 32)
        self.nwarps = nb * self.wpb
        self._dense = tpb % 32 == 0     # whole warps: thread t is lane t % 32 of warp t // 32
        self.wpos = t if self._dense else self.warp * 32 + self.lane
        self.regs = Registers(dtypes, self.N)
        self.nbatch, self.gaccess, self.saved = 1, None, None      # one batch (batches(): several)
        self.ustep, self.ucost = 1, 1 + self.N // STEP_THREADS      # a converged step's count and cost
        self.pc = np.zeros(self.N, np.int32)        # (int32: fewer bytes for run to scan)
        self.upc = None               # converged at this PC (self.pc stale): run's fast path
        self._all = np.ones(self.N, bool)
        self.alive = np.ones(self.N, bool)
        self.bwait = np.zeros(self.N, bool)
        self.swait = np.zeros(self.N, bool)
        self.epoch = np.zeros(nb, np.int64)
        self.shared = np.zeros(nb * (-(-max(ssize, 1) // 16) * 16), np.uint8)
        self.sstride = -(-max(ssize, 1) // 16) * 16
        self.lstride = -(-max(lsize, 1) // 16) * 16
        self.local = np.zeros(self.N * self.lstride, np.uint8) if lsize else np.zeros(16, np.uint8)
        self.steps = 0
        self.thread_instructions = 0
        self._trace = []
        self.trace_left = None
        self._cache = {}
        self._retried = self._stalled = False
        self.atomic_rng = None        # a Generator: colliding atomics in a seeded order (see launch())
        self.cost, self.cost_left = 0, None
        self.strict_barriers = False
        self.wsync = np.zeros(self.N, np.int64)      # bar.warp.sync completed per thread (traced)

    # ---- the scheduler ------------------------------------------------------------------------------
    def run(self, bound: int | None = None):
        """Issue steps until every thread has exited. A compacted sub-run (bound given) stops instead
        where the batch would issue to other threads too: at bound (the lowest PC of the batch's other
        runnable threads), at an instruction that needs the whole batch, or with nothing runnable."""
        n = len(self.k.instrs)
        big = np.int32(np.iinfo(np.int32).max)
        with np.errstate(all="ignore"):
            while True:
                if self.upc is not None:
                    if self._uniform_step(n, bound):
                        continue
                    self.pc, self.upc = np.full(self.N, self.upc, np.int32), None
                run = self.alive & ~self.bwait & ~self.swait & ~self.cwait
                every = bool(run.all())
                pcs = self.pc if every else np.where(run, self.pc, big)
                pc0 = int(pcs.min())
                if bound is not None and (pc0 >= bound or pc0 < n and not self.compactable[pc0]):
                    return
                if FAST_PATHS and pc0 < n and self.pure[pc0] and every and int(pcs.max()) == pc0:
                    self.upc = pc0           # converged: every thread runnable, at one PC
                    if self._uniform_step(n, bound):
                        continue
                    self.upc = None
                if pc0 == big:
                    if not self.alive.any():
                        return
                    if not self._unblock():
                        t = int(np.flatnonzero(self.alive)[0])
                        raise EmulatorError("barrier-divergence", "deadlock: live threads wait at barriers or "
                                            "warp-synchronous instructions that can never complete",
                                            **self.where(t, self.k.instrs[int(self.pc[t])]))
                    continue
                if pc0 >= n:
                    self.alive &= ~(pcs == pc0)      # fell off the end: like ret
                    continue
                act = pcs == pc0
                if FAST_PATHS and self.N >= COMPACT_MIN and self.compactable[pc0]:
                    cnt = int(np.count_nonzero(act))
                    if cnt * COMPACT_RATIO <= self.N:
                        rest = int(np.where(act, big, pcs).min())
                        self._compact(act, rest if bound is None else min(rest, bound))
                        continue
                ins = self.k.instrs[pc0]
                if self.nbatch > 1:              # a step of each batch with threads here
                    has = np.bincount(self.batch_of[act], minlength=self.nbatch) > 0
                    self.steps += int(np.count_nonzero(has))
                else:
                    self.steps += 1
                if self.steps > self.max_steps:
                    t = int(np.flatnonzero(act)[0])
                    raise EmulatorError("step-limit", f"step budget exceeded (an infinite loop?): more than "
                                        f"{self.max_steps} issue steps", **self.where(t, ins))
                if ins.op in WARP_SYNC:
                    more = self.swait & self.alive & (self.pc == pc0)
                    act |= more if self.nbatch == 1 else more & has[self.batch_of]
                cnt = int(np.count_nonzero(act))
                self.thread_instructions += cnt
                if self.nbatch > 1:
                    per = np.bincount(self.batch_of[act], minlength=self.nbatch)
                    self.cost += int(np.sum(np.where(per > 0, 1 + per // STEP_THREADS, 0)))
                else:
                    self.cost += 1 + cnt // STEP_THREADS
                if self.cost_left is not None and self.cost > self.cost_left:
                    t = int(np.flatnonzero(act)[0])
                    raise EmulatorError("step-limit", f"step budget exceeded (an infinite loop?): {self.steps} issue "
                                        f"steps to {self.batch_n} threads", **self.where(t, ins))
                full = cnt == self.N
                if ins.pred is not None:
                    pv = self.regs.raw(ins.pred.name)
                    ex = act & (~pv if ins.neg else pv)
                    if not ex.any():
                        self._advance(act, pc0, full)
                        continue
                    m = None if (full and ex.all()) else ex
                else:
                    m = None if full else act
                self._ins, self._m, self._stalled = ins, m, False
                self.regs.scalar_ok = self.scalar_ok[pc0]
                try:
                    handled = self.code[pc0](self, ins, m, act, pc0)
                except EmulatorError:
                    raise
                except (KeyError, ValueError, TypeError, IndexError, AttributeError, StopIteration) as e:
                    raise EmulatorError("unsupported", f"this form of {ins.op!r} is not emulated "
                                        f"({type(e).__name__}: {e})", instr=ins) from e
                if not handled:
                    self._advance(act, pc0, full)
                if not self._stalled:
                    self._retried = False

    def __getattr__(self, name):
        """A compacted sub-run's per-thread layout (_LAZY), gathered from its parent when first used."""
        if name in _LAZY and "_parent" in self.__dict__:
            v = getattr(self._parent, name)
            v = v[..., self._ids]
            setattr(self, name, v)
            return v
        raise AttributeError(name)

    def batches(self, size: int, saved: dict):
        """This machine runs several batches of `size` threads (_launch_merged): count steps and cost
        per batch, note global accesses (gaccess) and save allocations before their first write."""
        self.batch_of = np.arange(self.N) // size
        self.nbatch, self.gaccess, self.saved = int(self.batch_of[-1]) + 1, [], saved
        self._batch_counts(np.bincount(self.batch_of, minlength=self.nbatch))

    def _batch_counts(self, per):
        self.ustep = int(np.count_nonzero(per))
        self.ucost = int(np.sum(np.where(per > 0, 1 + per // STEP_THREADS, 0)))

    def _uniform_step(self, n: int, bound) -> bool:
        """One issue step while the batch is converged (upc: every thread alive, none waiting, all at
        PC upc; self.pc is then stale): the same step as run's, without per-thread PCs. False, having
        done nothing, where the step needs them (an instruction other than a pure one or a uniform
        branch) or a sub-run must stop."""
        pc0 = self.upc
        if pc0 >= n or not self.pure[pc0] or bound is not None and (pc0 >= bound or not self.compactable[pc0]):
            return False
        ins = self.k.instrs[pc0]
        m = None
        if ins.pred is not None:
            pv = self.regs.raw(ins.pred.name)
            ex = ~pv if ins.neg else pv
            if ex.all():
                pass
            elif not ex.any():
                m = False
            else:
                if ins.op in ("bar", "barrier") or ins.op in WARP_SYNC:
                    return False
                m = ex
        if ins.op in WARP_SYNC and not self._dense:
            return False                 # whole warps only: then every lane of every warp takes part
        if ins.op == "bra" and getattr(ins.args[0], "name", None) not in self.k.labels:
            return False                 # (the handler's error)
        self.steps += self.ustep
        if self.steps > self.max_steps:
            raise EmulatorError("step-limit", f"step budget exceeded (an infinite loop?): more than "
                                f"{self.max_steps} issue steps", **self.where(0, ins))
        self.thread_instructions += self.N
        self.cost += self.ucost
        if self.cost_left is not None and self.cost > self.cost_left:
            raise EmulatorError("step-limit", f"step budget exceeded (an infinite loop?): {self.steps} issue "
                                f"steps to {self.batch_n} threads", **self.where(0, ins))
        if m is False:
            self.upc = pc0 + 1
            return True
        self._retried = False
        if ins.op == "bra":
            tgt = self.k.labels[ins.args[0].name]
            if m is None:
                self.upc = tgt
            else:                            # the batch diverges here: per-thread PCs from now on
                self.pc, self.upc = np.where(m, np.int32(tgt), np.int32(pc0 + 1)), None
            return True
        self._ins, self._m, self._stalled = ins, m, False
        self.regs.scalar_ok = self.scalar_ok[pc0]
        try:
            self.code[pc0](self, ins, m, self._all, pc0)
        except EmulatorError:
            raise
        except (KeyError, ValueError, TypeError, IndexError, AttributeError, StopIteration) as e:
            raise EmulatorError("unsupported", f"this form of {ins.op!r} is not emulated "
                                f"({type(e).__name__}: {e})", instr=ins) from e
        if ins.op in ("bar", "barrier"):
            # every thread of every block arrived: released at once, as _unblock would
            self.bwait = np.zeros(self.N, bool)
            self.epoch += 1
        self.upc = pc0 + 1
        return True

    def _compact(self, act, bound):
        """Run the threads of act on their own, in arrays of their size, for as long as the batch would
        issue to them alone (run's bound): the same steps in the same order as the whole batch would
        make, each on fewer threads. Registers are gathered when first read and scattered back if
        written; the rest of the per-thread state likewise."""
        ids = np.flatnonzero(act)
        sub = object.__new__(type(self))
        sub.__dict__.update(self.__dict__)
        sub.N = len(ids)
        for name in _PER_THREAD:
            setattr(sub, name, getattr(self, name)[ids])
        for name in _IDLE:                  # the threads of act run: none waits (their flags are False)
            setattr(sub, name, np.zeros(len(ids), getattr(self, name).dtype))
        for name in _LAZY:                  # gathered when first used (__getattr__)
            sub.__dict__.pop(name, None)
        sub._parent, sub._ids = self, ids
        if "cf" in self.__dict__:
            sub.cf = self.cf[ids]
        sub.regs = Gathered(self.regs, ids)
        sub._cache, sub._all, sub.upc, sub._dense = {}, np.ones(len(ids), bool), None, False
        sub.gid = ids if self.gid is None else self.gid[ids]
        if self.gaccess is not None:           # (a merged group, of one batch or more)
            sub.batch_of = self.batch_of[ids]
        if self.nbatch > 1:
            sub._batch_counts(np.bincount(sub.batch_of, minlength=self.nbatch))
        else:
            sub.ucost = 1 + sub.N // STEP_THREADS
        sub.run(bound)
        for name in sub.regs.written:
            self.regs.scatter(name, ids, sub.regs.raw(name))
        self.pc[ids] = sub.pc               # (arrays of this machine alone: no other name refers to them)
        self.alive[ids] = sub.alive
        if "cf" in sub.__dict__:
            full = self.cf.copy() if "cf" in self.__dict__ else np.zeros(self.N, np.uint64)
            full[ids] = sub.cf
            self.cf = full
        self.steps, self.thread_instructions, self.cost = sub.steps, sub.thread_instructions, sub.cost
        self.trace_left, self._retried = sub.trace_left, False

    def _advance(self, act, pc0, full):
        if full:
            self.pc = np.full(self.N, pc0 + 1, np.int32)
        else:
            self.pc = np.where(act, pc0 + 1, self.pc)

    def _unblock(self) -> bool:
        """Nothing runnable: release blocks whose live threads all wait at a barrier, or warps whose
        awaited lanes have exited. False if nothing could be released (a deadlock)."""
        progress = False
        if self.bwait.any():
            live = np.count_nonzero(self.alive.reshape(self.nb, self.tpb), axis=1)     # blocks in order, whole
            waiting = np.count_nonzero((self.bwait & self.alive).reshape(self.nb, self.tpb), axis=1)
            ready = (live == waiting) & (waiting > 0)
            if ready.any():
                rel = np.repeat(ready, self.tpb) & self.bwait
                pcr, bkr = self.pc[rel], self.blk[rel]          # blk ascends: each block's threads in a run
                starts = np.flatnonzero(np.r_[True, bkr[1:] != bkr[:-1]])
                first = np.repeat(pcr[starts], np.diff(np.r_[starts, len(bkr)]))
                bad = set(np.unique(bkr[pcr != first]).tolist())       # the first block that fails a check
                if self.strict_barriers:
                    bad |= set(np.flatnonzero(ready & (live < self.tpb)).tolist())
                for b in sorted(bad)[:1]:
                    sel = rel & (self.blk == b)
                    pcs = np.unique(self.pc[sel])
                    if len(pcs) > 1:
                        t = int(np.flatnonzero(sel)[0])
                        raise EmulatorError("barrier-divergence", "threads of one block wait at different "
                                            f"barriers (lines {[self.k.instrs[p - 1].line for p in pcs]})",
                                            **self.where(t, self.k.instrs[int(pcs[0]) - 1]))
                    if self.strict_barriers and live[b] < self.tpb:
                        t = int(np.flatnonzero(sel)[0])
                        raise EmulatorError("barrier-divergence", f"a barrier released with {self.tpb - int(live[b])} "
                                            "of the block's threads exited before it",
                                            **self.where(t, self.k.instrs[int(pcs[0]) - 1]))
                self.bwait &= ~rel
                self.epoch += ready
                progress = True
        if self.cwait.any():
            # barrier.cluster.wait: released once every live thread of the cluster has arrived as often
            cid = self.cbase // self.csize
            low = np.full(int(cid.max()) + 1, np.iinfo(np.int64).max, np.int64)
            np.minimum.at(low, cid[self.alive], self.carr[self.alive])
            rel = self.cwait & (self.cneed <= low[cid])
            if rel.any():
                self.cwait &= ~rel
                progress = True
        if not progress and self.swait.any() and not self._retried:
            if self.nbatch > 1:
                raise _Dependent("a retry of waiting warps: when it comes depends on the batch")
            # warps waiting on lanes that have exited since: let them check again, once
            self.swait = np.zeros(self.N, bool)
            self._retried = True
            return True
        return progress

    def where(self, t: int, ins=None) -> dict:
        return {"block": tuple(int(x) for x in self.cta[:, t]), "thread": tuple(int(x) for x in self.tidx[:, t]),
                "instr": ins}

    # ---- warp synchronisation -----------------------------------------------------------------------
    def warp_bits(self, flags: np.ndarray) -> np.ndarray:
        """Per warp, a uint64 with bit `lane` set where flags holds."""
        if self._dense:
            bits = flags.astype(np.uint64) << self.lane.astype(np.uint64)
            return np.bitwise_or.reduce(bits.reshape(self.nwarps, 32), axis=1)
        padded = np.zeros(self.nwarps * 32, np.uint64)
        padded[self.wpos] = flags.astype(np.uint64) << self.lane.astype(np.uint64)
        return np.bitwise_or.reduce(padded.reshape(self.nwarps, 32), axis=1)

    def warp_ready(self, part: np.ndarray, member) -> np.ndarray:
        """Of the participating threads, those whose member mask's live lanes all participate."""
        if self._dense and part.all():
            return part                 # every lane of every warp participates
        at = self.warp_bits(part)[self.warp]
        live = self.warp_bits(self.alive)[self.warp]
        member = np.asarray(member).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        return part & ((member & live & ~at) == 0)

    def warp_gather(self, vals: np.ndarray, src_lane: np.ndarray) -> np.ndarray:
        """vals of lane src_lane of each thread's warp (own value where that lane does not exist)."""
        if self._dense:
            base = self._cache.get("warp32")
            if base is None:
                base = self._cache["warp32"] = self.warp * 32
            return vals[base + src_lane.astype(np.int64, copy=False)]
        padded = np.zeros(self.nwarps * 32, vals.dtype)
        exists = np.zeros(self.nwarps * 32, bool)
        padded[self.wpos] = vals
        exists[self.wpos] = True
        src = self.warp * 32 + src_lane.astype(np.int64)
        return np.where(exists[src], padded[src], vals)

    # ---- memory -------------------------------------------------------------------------------------
    def mem_locate(self, ins, space: str, addrs: np.ndarray, idx: np.ndarray, nbytes: int, kind: str,
                   align: int | None = None):
        """Split the accesses of lanes idx at addrs into groups (buffer uint8 array, positions into idx,
        byte offsets in the buffer, space, address within that space). Raises on misaligned or out-of-bounds accesses."""
        addrs = addrs.astype(np.uint64, copy=False)
        if len(addrs) == 0:
            return []
        align = nbytes if align is None else align
        if align > 1:
            bad = ((addrs & np.uint64(align - 1)) if align & (align - 1) == 0 else (addrs % np.uint64(align))) != 0
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                raise EmulatorError("misaligned", f"{nbytes}-byte {kind} at an address not a multiple of {align}",
                                    address=int(addrs[j]), buffer=self._bufname(space, int(addrs[j])),
                                    **self.where(int(idx[j]), ins))
        groups = []
        if space == "generic":
            sh = (addrs >= np.uint64(SHARED_WINDOW)) & (addrs < np.uint64(SHARED_WINDOW + WINDOW_SIZE))
            lo = (addrs >= np.uint64(LOCAL_WINDOW)) & (addrs < np.uint64(LOCAL_WINDOW + WINDOW_SIZE))
            gl = ~(sh | lo)
            for sel, sp, base in ((gl, "global", 0), (sh, "shared", SHARED_WINDOW), (lo, "local", LOCAL_WINDOW)):
                if sel.all():
                    return self.mem_locate(ins, sp, addrs - np.uint64(base), idx, nbytes, kind, align)
                if sel.any():
                    pos = np.flatnonzero(sel)
                    for buf, p, off, sp2, ta in self.mem_locate(ins, sp, addrs[pos] - np.uint64(base), idx[pos],
                                                                nbytes, kind, align):
                        groups.append((buf, pos[p], off, sp2, ta))
            return groups
        if space == "shared::cluster":
            return self._cluster_locate(ins, addrs, idx, nbytes, kind)
        if space in ("shared", "local"):
            limit, stride, buf, row = ((self.ssize, self.sstride, self.shared, self.blk) if space == "shared"
                                       else (self.lsize, self.lstride, self.local, self.lrow))
            bad = (addrs > np.uint64(limit)) | (addrs + np.uint64(nbytes) > np.uint64(limit))   # no wrap-around
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                raise EmulatorError("out-of-bounds", f"{kind} of {nbytes} bytes outside the {limit} bytes of {space} "
                                    "memory", address=int(addrs[j]), buffer=space, **self.where(int(idx[j]), ins))
            off = row[idx].astype(np.int64) * stride + addrs.astype(np.int64)
            return [(buf, np.arange(len(idx)), off, space, addrs)]
        # global (and const, which lives in global allocations)
        batches = None if self.gaccess is None else self.batch_of if len(idx) == self.N else self.batch_of[idx]
        lo, hi = int(addrs.min()), int(addrs.max())
        first = int(np.searchsorted(self.mem._starts, np.uint64(lo), side="right")) - 1
        if first >= 0 and hi + nbytes <= self.mem.allocs[first].start + self.mem.allocs[first].size:
            al = self.mem.allocs[first]          # all inside one allocation (what locate would find)
            if batches is not None:
                self.gaccess.append((addrs, nbytes, batches, kind, first))
            if self.saved is not None and kind != "read" and first not in self.saved:
                self.saved[first] = al.data.copy()
            return [(al.data, np.arange(len(idx)), (addrs - np.uint64(al.start)).astype(np.int64), "global", addrs)]
        k = self.mem.locate(addrs, nbytes)
        if (k < 0).any():
            j = int(np.flatnonzero(k < 0)[0])
            a = int(addrs[j])
            raise EmulatorError("out-of-bounds", f"{kind} of {nbytes} bytes outside every allocation",
                                address=a, buffer=self.mem.nearest(a), **self.where(int(idx[j]), ins))
        first = int(k[0])
        if (k == first).all():
            al = self.mem.allocs[first]
            if batches is not None:
                self.gaccess.append((addrs, nbytes, batches, kind, first))
            if self.saved is not None and kind != "read" and first not in self.saved:
                self.saved[first] = al.data.copy()
            return [(al.data, np.arange(len(idx)), (addrs - np.uint64(al.start)).astype(np.int64), "global", addrs)]
        for kk in np.unique(k):
            pos = np.flatnonzero(k == kk)
            al = self.mem.allocs[int(kk)]
            if batches is not None:
                self.gaccess.append((addrs[pos], nbytes, batches[pos], kind, int(kk)))
            if self.saved is not None and kind != "read" and int(kk) not in self.saved:
                self.saved[int(kk)] = al.data.copy()
            groups.append((al.data, pos, (addrs[pos] - np.uint64(al.start)).astype(np.int64), "global", addrs[pos]))
        return groups

    def _cluster_locate(self, ins, addrs, idx, nbytes, kind):
        """A shared::cluster address: bits 24 and up hold 1 + the rank of the block whose shared memory
        it names (what mapa makes; 0: this block, a shared::cta address), the low 24 bits the offset.
        Outside the cluster, past the shared size, or into a block that has exited: an error. (Not
        traced: the trace's race check knows a block's own shared memory only.)"""
        a = addrs.astype(np.int64)
        hi, lo = a >> CLUSTER_SHIFT, a & ((1 << CLUSTER_SHIFT) - 1)
        rank = np.where(hi == 0, self.crank[idx], hi - 1)
        bad = (rank >= self.csize) | (lo + nbytes > self.ssize)
        row = self.cbase[idx] + np.where(bad, 0, rank)
        if not bad.any():
            live = np.bincount(self.blk, self.alive, self.nb) > 0
            bad = ~live[row]
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise EmulatorError("out-of-bounds", f"shared::cluster {kind} of {nbytes} bytes at rank {int(rank[j])}, "
                                f"offset {int(lo[j])}: outside the cluster of {self.csize}, the {self.ssize} bytes of "
                                "shared memory, or into a block that has exited", address=int(addrs[j]),
                                buffer="shared::cluster", **self.where(int(idx[j]), ins))
        return [(self.shared, np.arange(len(idx)), row * self.sstride + lo, "shared::cluster", addrs)]

    def _bufname(self, space, addr):
        return self.mem.nearest(addr) if space in ("global", "const", "generic") else space

    def record(self, ins, space, idx, addrs, width, kind, since=None):
        if self.trace and space in ("global", "shared"):
            if self.trace_left is not None:
                self.trace_left -= len(idx)
                if self.trace_left < 0:
                    raise EmulatorError("step-limit", "too many traced accesses for the trace budget")
            self._trace.append((ins.index, space, idx.copy() if self.gid is None else self.gid[idx],
                                np.asarray(addrs, np.uint64).copy(), width, kind, self.epoch[self.blk[idx]].copy(),
                                self.wsync[idx].copy(), since))

