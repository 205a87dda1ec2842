"""Hopper warpgroup MMA in the PTX emulator: wgmma.fence / commit_group / wait_group / mma_async
(.sync.aligned), m64nNk16.f32.{bf16,f16}.{bf16,f16} in both operand forms:
  SS: {d}, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b (A [64][16] and
      B [N][16] read from shared memory through 64-bit matrix descriptors);
  RS: {d}, {a0, a1, a2, a3}, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b (A from registers).
imm-trans 0: the operand K-major (k contiguous), 1: MN-major (its rows m or n contiguous, the transpose).

Descriptor (PTX ISA, "matrix descriptor"): start address >> 4 in bits 0-13, leading-dimension byte
offset >> 4 in bits 16-29, stride-dimension byte offset >> 4 in bits 32-45, base offset in 49-51 (must
be 0 here), swizzle mode in 62-63 (0 none, 1 128-byte; 64- and 32-byte are refused). K-major: element
(row r, k) of an operand is at start + (r / 8) SBO + (r % 8) 16 + (k / 8) LBO + 2 (k % 8) without swizzle
(8 x 16-byte core matrices), and at start + (r / 8) SBO + (r % 8) 128 + 2 k under the 128-byte swizzle.
MN-major (the ISA's canonical layouts, in 16-byte units ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) without
swizzle and ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)) under the 128-byte one, T = 8 elements): (r, k) at
start + (r / 8) SBO + 2 (r % 8) + (k % 8) 16 + (k / 8) LBO without swizzle, and at start + (r / 64) LBO
+ 2 (r % 64) + (k % 8) 128 + (k / 8) SBO under the 128-byte swizzle (rows of 64 elements, k-rows of 128
bytes). The 128-byte swizzle XORs address bits 4-6 with bits 7-9 (tiles aligned to 1024 bytes).
A from registers (the ISA's m64nNk16 A fragment, 16-bit types): thread t of the warpgroup (warp w, lane l)
holds in register i (two elements, the low half first) row 16 w + l / 4 + 8 (i % 2), columns
8 (i / 2) + 2 (l % 4) + 0, 1 -- word for word the accumulator fragment of a 16-column slice of D below.
Accumulators (the ISA's m64nNk16 D fragment): thread t of the warpgroup (warp w = t / 32, lane l) holds
d[4 j + h] at row 16 w + l / 4 + 8 (h / 2), column 8 j + 2 (l % 4) + h % 2, for j < N / 8.

Warpgroup-collective: the four warps of a warpgroup (threads 128 g .. 128 g + 127 of the block) must
all arrive (like bar.sync for those 128 threads), and the operands (descriptors, scale-d) must agree
across them. Asynchrony as late as the ISA allows: at issue the accumulators' values are saved and the
registers become NaN (undefined until the wait_group that retires the operation: a kernel reading them
early sees NaN); the shared operands and A's registers are read, and D written, when a wgmma.wait_group
of the warpgroup retires the operation's commit group (the ISA leaves A's registers undefined to touch
before then: a kernel that rewrites them early gets a product of the new values), so a store to a stage before that wait changes the product (the
ISA makes it a race). A mma_async issued while an earlier one on the same accumulator registers is
pending chains onto that one's result, as the hardware does. Operations never retired are dropped.

Named barriers (bar.sync / bar.arrive a, b: barrier a of the block completes when b threads arrived),
the hand-over between a producer warpgroup and consumer warpgroups, and setmaxnreg (a warpgroup-
collective no-op here) are here too; the block-wide barrier forms stay with checker/emulator/sync.py.

Numerics (the ISA leaves them open): each k16 step as fitted to the H100's bits (bench/wgmma_fit.py on
bench/results/wgmma_probe_h100.txt: 99.7% of the registers bit-identical over 16 chained steps, the rest
within a few ulps): C and the 16 exact products aligned to the largest exponent among them with 26 bits
kept below it (truncated toward zero), summed exactly, the sum truncated toward zero to f32. Within the
op's documented tensor-core bound (kernels/ops/gemm.yaml) in any case. The register-A / MN-major form
against the H100 (attention_prefill_wg_probe_*, 4 or 8 chained steps of normals, bench/results/
attention_prefill_wg_dev_2026-11-24.txt): the layout exact, 99.5% of the registers bit-identical in bf16,
94% in f16 (the fit is bf16's), the rest within the bound."""
from __future__ import annotations

from functools import cache

import numpy as np

from kreg.checker.emulator import sync as emu_sync
from kreg.checker.emulator import fpround as F
from kreg.checker.emulator.ops import op

SWIZZLE_128B, NO_SWIZZLE = 1, 0
ALIGN_BITS = 26                  # bits kept below the largest exponent of a k16 step's terms (_fused_sum)


def _state(self):
    if not hasattr(self, "wg_pending"):
        tpb = self.tpb
        if tpb % 128:
            raise self.err("unsupported", f"wgmma in a block of {tpb} threads (not whole warpgroups of 128)")
        local = np.arange(self.N) % tpb
        self.wg_of = self.blk * (tpb // 128) + local // 128          # warpgroup of each thread
        self.wg_pos = local % 128                                    # thread's index in its warpgroup
        self.wg_pending = {}                                         # warpgroup -> [pending operations]
        self.wg_commits = np.zeros(self.nb * (tpb // 128), np.int64)
    return self


def _ready(self, ex):
    """Of the executing threads, those whose whole warpgroup executes (.aligned, collective)."""
    count = np.bincount(self.wg_of[ex], minlength=len(self.wg_commits))
    return ex & (count[self.wg_of] == 128)


def _uniform(self, vals, threads, what):
    v = vals[threads]
    if (v != v[0]).any():
        raise self.err("unsupported", f"wgmma {what} differs across the warpgroup")
    return v[0]


def _operand_addresses(self, desc: int, rows: int, mn_major: bool = False) -> np.ndarray:
    """Shared byte addresses [rows][16] of an operand's elements (row, k) under descriptor desc, K-major
    or MN-major (the transposed form, imm-trans 1)."""
    start = (desc & 0x3FFF) << 4
    lbo, sbo = ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4
    base_off, mode = (desc >> 49) & 7, desc >> 62
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(16, dtype=np.int64)[None, :]
    if mode == SWIZZLE_128B and base_off == 0:
        if mn_major:
            a = start + (r // 64) * lbo + 2 * (r % 64) + (k % 8) * 128 + (k // 8) * sbo
        else:
            a = start + (r // 8) * sbo + (r % 8) * 128 + 2 * k
        return a ^ (((a >> 7) & 7) << 4)
    if mode == NO_SWIZZLE and base_off == 0:
        if mn_major:
            return start + (r // 8) * sbo + 2 * (r % 8) + (k % 8) * 16 + (k // 8) * lbo
        return start + (r // 8) * sbo + (r % 8) * 16 + (k // 8) * lbo + 2 * (k % 8)
    raise self.err("unsupported", f"wgmma descriptor with swizzle mode {mode} and base offset {base_off}")


def _read_operand(self, ins, desc: int, rows: int, fmt: str, thread: int, mn_major: bool = False) -> np.ndarray:
    """The operand's elements as float64 [rows][16], read from the block of `thread` (recorded as its reads)."""
    addrs = _operand_addresses(self, desc, rows, mn_major).reshape(-1).astype(np.uint64)
    idx = np.full(addrs.size, thread, np.int64)
    bits = np.zeros(addrs.size, np.uint16)
    for buf, pos, off, sp, ta in self.mem_locate(ins, "shared", addrs, idx, 2, "read"):
        bits[pos] = buf[off].astype(np.uint16) | (buf[off + 1].astype(np.uint16) << np.uint16(8))
        self.record(ins, sp, idx[pos], ta, 2, "read")
    return F.to_f64(bits.astype(np.uint32), fmt).reshape(rows, 16)


@cache
def _fragment(n: int):
    """(row, column) [128 threads][n / 2 registers] of the m64nNk16 accumulator fragment (read-only)."""
    t = np.arange(128)[:, None]
    i = np.arange(n // 2)[None, :]
    w, lane, j, h = t // 32, t % 32, i // 4, i % 4
    rows, cols = 16 * w + lane // 4 + 8 * (h // 2), 8 * j + 2 * (lane % 4) + h % 2
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def _a_fragment():
    """(row, column) [128 threads][4 registers][2 halves] of the m64k16 A register fragment (16-bit types)."""
    t = np.arange(128)[:, None, None]
    i = np.arange(4)[None, :, None]
    e = np.arange(2)[None, None, :]
    w, lane = t // 32, t % 32
    return (np.broadcast_to(16 * w + lane // 4 + 8 * (i % 2), (128, 4, 2)),
            np.broadcast_to(8 * (i // 2) + 2 * (lane % 4) + e, (128, 4, 2)))


def _read_a_registers(self, items, threads, fmt: str) -> np.ndarray:
    """A [64][16] (float64) from the four b32 registers of the warpgroup's threads (low half first)."""
    words = np.stack([np.asarray(self.get(r, "b32")).astype(np.uint32)[threads] for r in items], axis=1)   # [128][4]
    halves = np.stack([words & 0xFFFF, words >> 16], axis=2)                                                # [128][4][2]
    rows, cols = _a_fragment()
    A = np.zeros((64, 16))
    A[rows, cols] = F.to_f64(halves.astype(np.uint32), fmt)
    return A


def _mma_async(self, ins, ready):
    shape = next((x for x in ins.mods if x.startswith("m64n") and x.endswith("k16")), None)
    ts = ins.types
    d = ins.args[0]
    rs = len(ins.args) > 1 and hasattr(ins.args[1], "items")            # A from registers
    if shape is None or len(ts) != 3 or ts[0] != "f32" or ts[1] != ts[2] or ts[1] not in ("bf16", "f16") \
            or len(ins.args) != (7 if rs else 8) or not hasattr(d, "items") or (rs and len(ins.args[1].items) != 4):
        raise self.err("unsupported", f"wgmma.{'.'.join(ins.mods)} (only m64nNk16 f32 += bf16/f16 x bf16/f16, "
                       "A from a shared-memory descriptor or four registers, B from a descriptor)")
    n = int(shape[4:-3])
    if n % 8 or not 8 <= n <= 256 or len(d.items) != n // 2:
        raise self.err("unsupported", f"wgmma shape {shape} with {len(d.items)} accumulators")
    trans = [0 if rs else int(self.get(ins.args[6], "u32")), int(self.get(ins.args[-1], "u32"))]
    if any(t not in (0, 1) for t in trans):
        raise self.err("unsupported", f"wgmma transpose immediates {trans}")
    scales = [int(np.int32(self.get(a, "s32"))) for a in ins.args[4:6]]
    da = None if rs else np.broadcast_to(np.asarray(self.get(ins.args[1], "b64")), (self.N,)).astype(np.uint64)
    db = np.broadcast_to(np.asarray(self.get(ins.args[2], "b64")), (self.N,)).astype(np.uint64)
    sd = np.broadcast_to(np.asarray(self.get(ins.args[3], "pred")), (self.N,))
    names = tuple(r.name for r in d.items)
    groups = np.unique(self.wg_of[ready])
    members = [np.flatnonzero(self.wg_of == g) for g in groups]    # in thread order: position = wg_pos
    every = np.concatenate(members)                                 # the groups' threads are disjoint: read at once
    Cs = np.split(np.stack([np.asarray(self.get(r, "f32"))[every] for r in d.items], axis=1).astype(np.float32),
                  np.cumsum([len(m) for m in members])[:-1])
    for g, threads, C in zip(groups, members, Cs):
        pend = self.wg_pending.setdefault(int(g), [])
        chained = any(p["names"] == names for p in pend)
        pend.append({"names": names, "items": d.items, "n": n, "fmt": ts[1], "ins": ins, "threads": threads,
                     "a": ins.args[1].items if rs else int(_uniform(self, da, threads, "A descriptor")),
                     "b": int(_uniform(self, db, threads, "B descriptor")), "trans": trans,
                     "scale_d": bool(_uniform(self, sd, threads, "scale-d")), "scales": scales,
                     "chained": chained, "C": C, "group": int(self.wg_commits[g])})
    undefined = np.full(len(every), np.nan, np.float32)              # (put_at never keeps the array it is given)
    for r in d.items:                                                # undefined until retired
        self.put_at(r, every, undefined, "f32")


def _fused_sum(terms: np.ndarray) -> np.ndarray:
    """The H100's k16 step (fitted to its bits, bench/wgmma_fit.py): the accumulator and the 16 exact
    products (terms[0] and terms[1:], the first axis) aligned to the largest exponent among them with 26
    bits kept below it (24 + 2; the rest truncated toward zero), summed exactly, the sum truncated toward
    zero to f32. (The aligned terms are integers times one power of two, below 2^31 in all: their sum is
    exact in any order.)"""
    with np.errstate(all="ignore"):
        big = np.maximum(terms.max(axis=0), -terms.min(axis=0))   # |largest|: inf or NaN where any term is
        finite = np.isfinite(big)
        e = np.frexp(np.where(finite, big, 1.0))[1].astype(np.int64)      # big < 2^e
        scale = np.ldexp(1.0, ALIGN_BITS - e)
        ieee = None if finite.all() else terms.sum(axis=0)                # inf / NaN as IEEE sums
        aligned = np.multiply(terms, scale)
        exact = np.trunc(aligned, out=aligned).sum(axis=0) / scale
        if ieee is not None:
            exact = np.where(finite, exact, ieee)
        r = exact.astype(np.float32)
        over = np.isfinite(exact) & (np.abs(r.astype(np.float64)) > np.abs(exact))
        return np.where(over, np.nextafter(r, np.float32(0)), r)


def _retire(self, p, later) -> None:
    """Compute a pending operation: into the next pending one chained on the same accumulators (whose
    registers stay undefined), or else into the registers."""
    threads, n, ins = p["threads"], p["n"], p["ins"]
    if isinstance(p["a"], int):
        A = _read_operand(self, ins, p["a"], 64, p["fmt"], int(threads[0]), bool(p["trans"][0]))
    else:
        A = _read_a_registers(self, p["a"], threads, p["fmt"])
    B = _read_operand(self, ins, p["b"], n, p["fmt"], int(threads[0]), bool(p["trans"][1]))
    rows, cols = _fragment(n)
    if p["chained"]:                     # its predecessor is gone (never happens for retirement in order)
        C = np.stack([np.asarray(self.get(r, "f32"))[threads] for r in p["items"]], axis=1).astype(np.float32)
    else:
        C = p["C"]
    terms = np.zeros((17, 64, n))                          # the accumulator, then the 16 exact products
    if p["scale_d"]:
        terms[0][rows, cols] = C
    np.multiply(A.T[:, :, None], B.T[:, None, :], out=terms[1:])
    if p["scales"][0] * p["scales"][1] != 1:
        terms[1:] *= p["scales"][0] * p["scales"][1]
    D = F.canon_f32(_fused_sum(terms))[rows, cols]
    nxt = next((q for q in later if q["names"] == p["names"]), None)
    if nxt is not None:
        nxt["C"], nxt["chained"] = D, False
        return
    for i, r in enumerate(p["items"]):
        self.put_at(r, threads, D[:, i], "f32")


@op("wgmma")
def _wgmma(self, ins, m, act, pc0):
    if not ins.has("sync") or not ins.has("aligned"):
        raise self.err("unsupported", f"wgmma.{'.'.join(ins.mods)}")
    _state(self)
    ex = act if m is None else m
    ready = _ready(self, ex)
    waiting = ex & ~ready
    self._stalled = not ready.any()
    self.swait = (self.swait & ~act) | waiting
    if ready.any():
        self._m = ready
        groups = np.unique(self.wg_of[ready])
        if ins.has("fence"):
            pass                         # orders register and shared accesses: nothing to do here
        elif ins.has("commit_group"):
            self.wg_commits[groups] += 1
        elif ins.has("wait_group"):
            keep = int(ins.args[0].value)
            for g in groups:
                pend = self.wg_pending.get(int(g), [])
                last = int(self.wg_commits[g]) - keep           # groups below this one retire
                for i, p in enumerate(pend):
                    if p["group"] < last:
                        _retire(self, p, pend[i + 1:])
                self.wg_pending[int(g)] = [p for p in pend if p["group"] >= last]
        elif ins.has("mma_async"):
            _mma_async(self, ins, ready)
        else:
            raise self.err("unsupported", f"wgmma.{'.'.join(ins.mods)}")
    self.pc = np.where(act & ~waiting, pc0 + 1, self.pc)
    return True


# ---- named barriers (the hand-over between a producer warpgroup and the consumers) -------------------------

def _named_state(self):
    if not hasattr(self, "nb_arrived"):
        self.nb_arrived = np.zeros((self.nb, 16), np.int64)      # threads arrived at (block, barrier id)
        self.nb_waiting = np.full(self.N, -1, np.int64)          # the barrier id a thread waits at (bar.sync)
    return self


def _release(self, blk: int, bid: int) -> None:
    sel = (self.blk == blk) & (self.nb_waiting == bid)
    self.nb_waiting[sel] = -1
    self.swait &= ~sel
    self.pc = np.where(sel, self.pc + 1, self.pc)
    self.nb_arrived[blk, bid] = 0


@op("bar", "barrier")
def _bar_named(self, ins, m, act, pc0):
    """bar.sync / bar.arrive / barrier.sync a, b with a barrier id a (0..15) and a thread count b: the
    barrier completes when b threads of the block have arrived (sync or arrive), releasing the threads that
    sync on it; arrive does not wait. Plain block barriers (bar.sync 0 without a count or with the block
    size) keep the block-wide handler (checker/emulator/sync.py)."""
    arrive = ins.has("arrive")
    if ins.has("warp", "red", "cluster") or (not arrive and (len(ins.args) < 2 and _is_zero(self, ins))):
        return emu_sync._bar(self, ins, m, act, pc0)          # looked up now: other forms stay theirs
    if len(ins.args) not in (1, 2) or not ins.has("sync", "arrive"):
        raise self.err("unsupported", f"{ins.op}.{'.'.join(ins.mods)}")
    _named_state(self)
    ex = act if m is None else m
    ids = np.broadcast_to(np.asarray(self.get(ins.args[0], "u32")), (self.N,)).astype(np.int64)
    counts = (np.broadcast_to(np.asarray(self.get(ins.args[1], "u32")), (self.N,)).astype(np.int64)
              if len(ins.args) == 2 else np.full(self.N, self.tpb, np.int64))
    if arrive and len(ins.args) < 2:
        raise self.err("unsupported", "bar.arrive without a thread count")
    new = ex & (self.nb_waiting != ids)                          # a waiting thread re-run is not counted again
    for blk, bid in {(int(b), int(i)) for b, i in zip(self.blk[new], ids[new])}:
        sel = new & (self.blk == blk) & (ids == bid)
        cnt = np.unique(counts[sel])
        if len(cnt) != 1 or cnt[0] % 32 or not 0 < cnt[0] <= self.tpb or not 0 <= bid < 16:
            raise self.err("unsupported", f"barrier {bid} with thread counts {cnt.tolist()}")
        self.nb_arrived[blk, bid] += int(np.count_nonzero(sel))
        if not arrive:
            self.nb_waiting[sel] = bid
        if self.nb_arrived[blk, bid] > cnt[0]:
            raise self.err("barrier-divergence", f"more than {cnt[0]} threads arrive at barrier {bid}")
    if arrive:
        self.pc = np.where(ex, pc0 + 1, self.pc)
    waiting = ex & (self.nb_waiting >= 0)
    self.swait = self.swait | waiting
    for blk, bid in {(int(b), int(i)) for b, i in zip(self.blk[ex], ids[ex])}:
        cnt = int(counts[ex & (self.blk == blk) & (ids == bid)][0])
        if self.nb_arrived[blk, bid] == cnt:
            _release(self, blk, bid)
    self._stalled = bool((ex & self.swait).all()) and not arrive
    return True


def _is_zero(self, ins) -> bool:
    a = ins.args[0] if ins.args else None
    return a is None or (hasattr(a, "value") and int(a.value) == 0)



@op("setmaxnreg")
def _setmaxnreg(self, ins, m, act, pc0):
    """setmaxnreg.{inc,dec}.sync.aligned.u32 n: the warpgroup's register budget, nothing to emulate; checked
    warpgroup-collective (all 128 threads) and 24 <= n <= 256, a multiple of 8, as the ISA requires."""
    n = int(ins.args[0].value) if ins.args and hasattr(ins.args[0], "value") else -1
    if not ins.has("sync") or not ins.has("aligned") or not ins.has("inc", "dec") or n % 8 or not 24 <= n <= 256:
        raise self.err("unsupported", f"setmaxnreg.{'.'.join(ins.mods)} {n}")
    _state(self)
    ex = act if m is None else m
    ready = _ready(self, ex)
    waiting = ex & ~ready
    self._stalled = not ready.any()
    self.swait = (self.swait & ~act) | waiting
    self.pc = np.where(act & ~waiting, pc0 + 1, self.pc)
    return True
