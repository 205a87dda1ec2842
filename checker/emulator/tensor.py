"""Tensor-core and asynchronous-copy instructions of the PTX emulator (the forms a Hopper-era mma.sync GEMM
uses). mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 and ldmatrix.sync.aligned.m8n8
.{x1,x2,x4}{.trans}.shared.b16 are warp-collective: they wait until all 32 lanes of the warp arrive
(an exited lane is an error) and move fragments between lanes exactly as the PTX ISA lays them out
(groupID = lane / 4, threadID_in_group = lane % 4). The mma's products of 16-bit inputs are exact in
float64 and are summed there with C, then rounded once to f32 (round to nearest even): the exact result
up to a relative error below 2^-49 of the sum of |terms| before that rounding. The ISA leaves the order
and precision of the tensor core's own additions unspecified (the H100 aligns the products to the
largest exponent and truncates), so a GPU may differ from this by a few f32 ulps of the sum of |terms|
(at most (k + 1) * 2^-23 * (|c| + sum |a_i b_i|) for k = 16 products).
cp.async{.ca,.cg}.shared.global [dst], [src], size{, src_size}: the global source is read at issue
(src_size bytes, the rest zero-filled; nothing read when src_size is 0) and the shared destination is
written as late as the ISA allows, when a cp.async.wait_group / wait_all of the issuing thread
completes its group, so a kernel that reads the destination before waiting sees stale bytes here;
commit_group closes the thread's current group; copies never waited for are dropped at the thread's end
(shared memory does not outlive the block)."""
from __future__ import annotations

import numpy as np

from kreg.checker.emulator import fpround as F
from kreg.checker.emulator.ops import op
from kreg.checker.ptx import parse as P
from kreg.checker.emulator.memory import _addresses, _lanes
from kreg.checker.emulator.sync import _warp_sync

FULL = np.uint32(0xFFFFFFFF)


# ---- warp-collective fragments ------------------------------------------------------------------------

def _all_lanes(self, ready, what):
    """The warps of `ready` lanes, checked complete (.aligned: every lane of the warp executes it)."""
    warps = np.unique(self.warp[ready])
    count = np.bincount(self.warp[ready], minlength=self.nwarps)[warps]
    if (count != 32).any():
        raise self.err("unsupported", f"{what} executed by {int(count.min())} lanes of a warp (.aligned needs all 32)")
    return warps


def _grid(self, vals, warps):
    """vals (one per thread) as [warp, lane] for the given warps."""
    vals = np.broadcast_to(np.asarray(vals), (self.N,))
    padded = np.zeros(self.nwarps * 32, vals.dtype)
    padded[self.wpos] = vals
    return padded.reshape(self.nwarps, 32)[warps]


def _scatter(self, grid, warps, dtype):
    """[warp, lane] values back to one per thread (threads of other warps: 0)."""
    padded = np.zeros((self.nwarps, 32), dtype)
    padded[warps] = grid
    return padded.reshape(-1)[self.wpos]


def _halves(w, fmt):
    """A packed b32 array -> (low element, high element) as float64."""
    w = w.astype(np.uint32)
    return F.to_f64(w & np.uint32(0xFFFF), fmt), F.to_f64(w >> np.uint32(16), fmt)


def _mma_body(self, ins, m, ready):
    shape = next((x for x in ins.mods if x.startswith("m") and "n" in x and "k" in x), None)
    ts = ins.types
    if shape != "m16n8k16" or not ins.has("row") or not ins.has("col") or len(ts) != 4 or ts[0] != "f32" \
            or ts[3] != "f32" or ts[1] != ts[2] or ts[1] not in ("bf16", "f16"):
        raise self.err("unsupported", f"mma.{'.'.join(ins.mods)}")
    fmt = ts[1]
    d, a, b, c = ins.args
    warps = _all_lanes(self, ready, "mma.sync")
    nw = len(warps)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    A = np.zeros((nw, 16, 16))
    for r, (dr, dc) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
        lo, hi = _halves(_grid(self, np.asarray(self.get(a.items[r], "b32")), warps), fmt)
        A[:, g + dr, 2 * t + dc] = lo
        A[:, g + dr, 2 * t + dc + 1] = hi
    B = np.zeros((nw, 16, 8))
    for r in range(2):
        lo, hi = _halves(_grid(self, np.asarray(self.get(b.items[r], "b32")), warps), fmt)
        B[:, 2 * t + 8 * r, g] = lo
        B[:, 2 * t + 8 * r + 1, g] = hi
    C = np.zeros((nw, 16, 8))
    for r in range(4):
        C[:, g + 8 * (r >> 1), 2 * t + (r & 1)] = _grid(self, np.asarray(self.get(c.items[r], "f32")), warps)
    D = (C + np.einsum("wik,wkj->wij", A, B)).astype(np.float32)
    D = F.canon_f32(D)
    for r in range(4):
        vals = D[:, g + 8 * (r >> 1), 2 * t + (r & 1)]
        self.put(d.items[r], _scatter(self, vals, warps, np.float32), "f32", m)


@op("mma")
def _mma(self, ins, m, act, pc0):
    if not ins.has("sync") or not ins.has("aligned"):
        raise self.err("unsupported", f"mma.{'.'.join(ins.mods)}")
    return _warp_sync(self, ins, m, act, pc0, _mma_body, member=FULL)


def _ldmatrix_body(self, ins, m, ready):
    num = next((int(x[1]) for x in ins.mods if x in ("x1", "x2", "x4")), None)
    if num is None or not ins.has("m8n8") or ins.type != "b16" or ins.space != "shared" or \
            len(ins.args[0].items) != num:
        raise self.err("unsupported", f"ldmatrix.{'.'.join(ins.mods)}")
    warps = _all_lanes(self, ready, "ldmatrix")
    idx = np.flatnonzero(ready & (self.lane < 8 * num))         # the lanes that supply row addresses
    addrs = _addresses(self, ins.args[1], "shared", idx)
    rows = np.zeros((len(idx), 8), np.uint16)
    for buf, pos, off, sp, ta in self.mem_locate(ins, "shared", addrs, idx, 16, "read"):
        rows[pos] = buf.view(np.uint16)[(off // 2)[:, None] + np.arange(8)]
        self.record(ins, sp, idx[pos], ta, 16, "read")
    mats = np.zeros(self.nwarps * 32 * 8, np.uint16).reshape(self.nwarps, 32, 8)
    mats[self.warp[idx], self.lane[idx]] = rows                  # [warp, supplying lane = 8 i + row, column]
    mats = mats[warps]
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    for i in range(num):
        mat = mats[:, 8 * i:8 * i + 8, :]                         # [warp, row, column]
        if ins.has("trans"):
            lo, hi = mat[:, 2 * t, g], mat[:, 2 * t + 1, g]
        else:
            lo, hi = mat[:, g, 2 * t], mat[:, g, 2 * t + 1]
        word = lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
        self.put(ins.args[0].items[i], _scatter(self, word, warps, np.uint32), "b32", m)


@op("ldmatrix")
def _ldmatrix(self, ins, m, act, pc0):
    if not ins.has("sync") or not ins.has("aligned"):
        raise self.err("unsupported", f"ldmatrix.{'.'.join(ins.mods)}")
    return _warp_sync(self, ins, m, act, pc0, _ldmatrix_body, member=FULL)


# ---- asynchronous copies ------------------------------------------------------------------------------

def _async_state(self):
    if not hasattr(self, "cp_pending"):
        self.cp_pending = []                       # [thread indices, shared offsets, data, group, addresses, issue epochs]
        self.cp_commits = np.zeros(self.N, np.int64)
    return self


def _complete(self, ins, done_fn):
    """Write the pending copies for which done_fn(threads, groups) holds, in issue order."""
    keep = []
    for idx, off, data, grp, ta, ep in self.cp_pending:
        done = done_fn(idx, grp)
        if done.any():
            sel = np.flatnonzero(done)
            self.shared[off[sel, None] + np.arange(data.shape[1])] = data[sel]
            self.record(ins, "shared", idx[sel], ta[sel], data.shape[1], "write", since=ep[sel])
        if not done.all():
            rest = np.flatnonzero(~done)
            keep.append((idx[rest], off[rest], data[rest], grp[rest], ta[rest], ep[rest]))
    self.cp_pending = keep


@op("cp")
def _cp_async(self, ins, m, act, pc0):
    if not ins.has("async") or ins.has("bulk", "tensor", "mbarrier", "reduce"):
        raise self.err("unsupported", f"cp.{'.'.join(ins.mods)}")
    _async_state(self)
    ex = np.flatnonzero(act if m is None else m)
    if ins.has("commit_group"):
        self.cp_commits[ex] += 1
        return
    if ins.has("wait_all") or ins.has("wait_group"):
        mine = np.zeros(self.N, bool)
        mine[ex] = True
        if ins.has("wait_all"):
            _complete(self, ins, lambda idx, grp: mine[idx])
        else:
            n = int(ins.args[0].value)
            _complete(self, ins, lambda idx, grp: mine[idx] & (grp < self.cp_commits[idx] - n))
        return
    if ins.space != "shared" or not ins.has("global") or not ins.has("ca", "cg"):
        raise self.err("unsupported", f"cp.{'.'.join(ins.mods)}")
    size = int(ins.args[2].value)
    if size not in (4, 8, 16) or ins.has("cg") and size != 16:
        raise self.err("unsupported", f"cp.async of {size} bytes")
    idx = _lanes(self, m)
    src = _addresses(self, ins.args[1], "global", idx)
    dst = _addresses(self, ins.args[0], "shared", idx)
    extra = P.cp_async_operands(ins)
    if len(extra) > 1:
        raise self.err("unsupported", f"cp.async with operands {ins.text.strip()}")
    if not extra:
        n_src = np.full(len(idx), size)
    elif isinstance(extra[0], P.Reg) and self.regs.dtypes[extra[0].name] == np.bool_:      # ignore-src
        n_src = np.where(np.broadcast_to(np.asarray(self.get(extra[0], "pred")), (self.N,))[idx], 0, size)
    else:
        n_src = np.broadcast_to(np.asarray(self.get(extra[0], "u32")), (self.N,))[idx].astype(np.int64)
    if (n_src > size).any():
        raise self.err("unsupported", "cp.async with src-size larger than cp-size")
    data = np.zeros((len(idx), size), np.uint8)
    whole = np.flatnonzero(n_src == size)
    for buf, pos, off, sp, ta in self.mem_locate(ins, "global", src[whole], idx[whole], size, "read"):
        data[whole[pos]] = buf[off[:, None] + np.arange(size)]
        self.record(ins, sp, idx[whole[pos]], ta, size, "read")
    for j in np.flatnonzero((n_src < size) & (n_src > 0)):      # partial copies (zero-filled tails)
        nb = int(n_src[j])
        for buf, pos, off, sp, ta in self.mem_locate(ins, "global", src[j:j + 1], idx[j:j + 1], nb, "read", size):
            data[j, :nb] = buf[int(off[0]):int(off[0]) + nb]
            self.record(ins, sp, idx[j:j + 1], ta, nb, "read")
    for buf, pos, off, sp, ta in self.mem_locate(ins, "shared", dst, idx, size, "write"):
        self.cp_pending.append((idx[pos], off, data[pos], self.cp_commits[idx[pos]].copy(), np.asarray(ta),
                                self.epoch[self.blk[idx[pos]]].copy()))
