"""Speed on the GPU: CUDA events around batches of launches (captured once as a CUDA graph, falling back
to plain stream launches), after a warm-up, median and spread of many batches, each launch on another
set of buffers so the working set exceeds L2; the device-to-device copy bandwidth measured in the same
process; achieved bytes/s from the op's traffic model; a figure above the roofline is flagged as a
broken kernel or a broken measurement. The roofline is the DRAM's theoretical rate where the device
reports it (a read-only stream legitimately beats the copy, which turns the bus around: gemv's lm_head
reads at 106% of the copy rate on the H100), else 5% above the measured copy. A variant whose kernels all wait first (checker/ptx/pdl.py) is timed
a second time as the engine runs it, each launch in the graph with programmatic dependent launch
(`pdl_us`: its start overlaps the previous launch's tail); `engine_us` is the time as the engine runs
the variant (pdl_us where it may use PDL, else median_us), what profiles rank by."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from kreg import runtime
from kreg.checker.ptx.pdl import waits_first
from kreg.registry.schema import Op, Variant

from .harness import GpuHarness, config, ptx_module
from .dtypes import encode, itemsize
from .inputs import index_values, make_inputs, output_params, poison_bytes, to_bytes
from kreg.checker.ptx.bind import bind, buffer_sizes

MAX_SETS = 1 << 15
ROOFLINE_SLACK = 1.05     # measured copy bandwidth is itself a measurement; 5% above it is already broken
PEAK_SLACK = 1.01         # the theoretical DRAM rate, from clock and bus width as the device reports them


def roofline(dev, copy_bw: float) -> float:
    """Bytes/s no kernel can beat on this device: its DRAM peak where known, else the copy's with slack."""
    peak = getattr(dev, "peak_bytes_per_s", None)
    return PEAK_SLACK * peak if peak else ROOFLINE_SLACK * copy_bw


def _time_batches(cp, fn, batches: int, per_batch: int, warmup: int = 3) -> list[float]:
    """Seconds per call of fn(i), one figure per batch of per_batch calls timed by CUDA events."""
    for i in range(warmup):
        fn(i)
    cp.cuda.Device().synchronize()
    out, k = [], 0
    for _ in range(batches):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(per_batch):
            fn(k)
            k += 1
        stop.record()
        stop.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3 / per_batch)
    return out


def _time_graph(dev: GpuHarness, launch, count: int, batches: int) -> list[float]:
    """Seconds per call of launch(i, stream) for i < count, captured once as a CUDA graph and replayed
    (no host launch overhead between kernels, as in the engine's decode graph)."""
    cp, stream = dev.cp, dev.rt.stream(non_blocking=True)
    graph = dev.rt.capture(lambda s: [launch(i, s) for i in range(count)])
    graph.replay(stream)
    stream.sync()
    out = []
    for _ in range(batches):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream.handle)
        graph.replay(stream)
        stop.record(stream.handle)
        stop.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3 / count)
    return out


def copy_bandwidth(dev: GpuHarness, nbytes: int = 1 << 30, batches: int = 15) -> float:
    """Device-to-device copy bytes/s, counting bytes read plus bytes written."""
    cp = dev.cp
    src, dst = cp.empty(nbytes, dtype=cp.uint8), cp.empty(nbytes, dtype=cp.uint8)
    src.fill(1)
    ts = _time_batches(cp, lambda i: dst.data.copy_from_device_async(src.data, nbytes), batches, 2)
    del src, dst
    return 2 * nbytes / float(np.median(ts))


def _padded(nbytes: int) -> int:
    return -(-nbytes // 256) * 256


def plan_sets(op: Op, variant: Variant, dims: dict[str, int], sizes: dict[str, int], arena_bytes: int):
    """(shared buffers, bytes of one set, bytes one launch touches, number of sets). Buffers the op
    touches only in part (its `traffic` entries: a gathered table, a KV cache) are allocated once and
    shared; every other buffer gets one copy per set, and index params are drawn afresh for each set, so
    that the sets touch different rows of the shared ones; enough sets that what they touch together
    reaches arena_bytes (at least one launch's worth)."""
    shared = [n for n in sizes if n in op.traffic]
    set_bytes = sum(_padded(s) for n, s in sizes.items() if n not in shared) or 256
    touched = set_bytes + sum(int(op.traffic[n](dims)) * itemsize(op.dtype_of(n, variant.types)) for n in shared)
    nsets = max(1, min(MAX_SETS, math.ceil(max(arena_bytes, touched) / touched)))
    return shared, set_bytes, touched, nsets


def time_case(dev: GpuHarness, module, variant: Variant, op: Op, dims: dict[str, int], copy_bw: float,
              seed: int = 0, batches: int = 21, min_batch_s: float = 2e-3, arena_bytes: int | None = None,
              graph: bool = True) -> dict:
    """Median time of the variant at these dims with inputs rotated through enough buffer sets to
    exceed twice the L2 cache, and its place against the copy roofline."""
    sizes = buffer_sizes(variant, op, dims)
    traffic = op.traffic_bytes(dims, variant.types)
    dtypes = {n: op.dtype_of(n, variant.types) for n in sizes if n in op.params}
    shared, set_bytes, touched, nsets = plan_sets(op, variant, dims, sizes, arena_bytes or 2 * dev.l2_bytes)
    pad = {n: _padded(s) for n, s in sizes.items()}
    rng = np.random.default_rng(seed)
    first = make_inputs(op, variant, dims, rng, draw=0)      # index ranges' tops: n = S for a cache length
    image = np.zeros(set_bytes, dtype=np.uint8)   # one set's bytes: inputs and poisoned outputs
    shared_image = np.zeros(sum(pad[n] for n in shared) or 256, dtype=np.uint8)
    offsets, off, soff = {}, 0, 0
    for n, s in sizes.items():
        buf, o = (shared_image, soff) if n in shared else (image, off)
        offsets[n] = o
        if n in first:
            buf[o:o + s] = to_bytes(first[n])
        elif n in output_params(op):
            buf[o:o + s] = poison_bytes(dtypes[n], s)
        if n in shared:
            soff += pad[n]
        else:
            off += pad[n]
    redrawn = {}                  # index params drawn afresh for every other set (host side, before the turn)
    for n in sizes:
        p = op.params.get(n)
        if shared and n not in shared and p is not None and p.values is not None and n in first and nsets > 1:
            vals = index_values(op, n, dims, rng, (nsets - 1, first[n].size))
            redrawn[n] = np.ascontiguousarray(encode(vals, dtypes[n])).view(np.uint8).reshape(nsets - 1, -1)
    del first
    with dev.turn:                # the GPU to this variant alone from here on
        return _time_sets(dev, module, variant, op, dims, copy_bw, sizes, image, shared_image, offsets, redrawn,
                          shared, set_bytes, touched, nsets, traffic, batches, min_batch_s, graph)


def _time_sets(dev, module, variant, op, dims, copy_bw, sizes, image, shared_image, offsets, redrawn, shared,
               set_bytes, touched, nsets, traffic, batches, min_batch_s, graph) -> dict:
    cp = dev.cp
    arena = cp.empty(nsets * set_bytes, dtype=cp.uint8)
    sets = arena.reshape(nsets, set_bytes)
    sets[:] = cp.asarray(image)
    for n, bits in redrawn.items():
        sets[1:, offsets[n]:offsets[n] + sizes[n]] = cp.asarray(bits)
    shared_arena = cp.asarray(shared_image)
    base, sbase = int(arena.data.ptr), int(shared_arena.data.ptr)
    ptrs = {n: (sbase if n in shared else base) + o for n, o in offsets.items()}
    per_set = {ptrs[n] for n in sizes if n not in shared}
    first_set = bind(variant, op, ptx_module(dev, module), dims, ptrs)
    is_ptr = [[isinstance(a, np.uint64) and int(a) in per_set for a in bl.args] for bl in first_set]
    bound = [[replace(bl, args=tuple(np.uint64(int(a) + i * set_bytes) if p else a for a, p in zip(bl.args, isp)))
              for bl, isp in zip(first_set, is_ptr)] for i in range(nsets)]
    sets_of = [[(module.kernel(bl.entry), config(bl), bl.args) for bl in b] for b in bound]
    parsed = ptx_module(dev, module)
    pdl_ready = graph and not variant.vendor and all(waits_first(parsed.kernel(bl.entry)) for bl in first_set)

    def one(i, stream=None, attributes=frozenset()):
        for kernel, cfg, args in sets_of[i % nsets]:
            if attributes:
                cfg = runtime.LaunchConfig(cfg.grid, cfg.block, cfg.shared, cfg.attributes | attributes)
            kernel.launch(cfg, *args, stream=stream)

    probe = _time_batches(cp, one, 1, 3, warmup=1)[0]
    per_batch = max(1, min(2000, math.ceil(min_batch_s / max(probe, 1e-7))))
    timing = "cuda-graph" if graph else "stream"
    try:
        if not graph:
            raise RuntimeError("graphs off")
        # every set once per replay, so a set is reused only after all the others (past L2)
        ts = _time_graph(dev, one, max(per_batch, nsets), batches)
    except Exception as e:
        if graph:
            timing = f"stream (graph capture failed: {type(e).__name__}: {e})"
        cp.cuda.Device().synchronize()
        ts = _time_batches(cp, one, batches, per_batch)
    pdl_us = None
    if pdl_ready and timing == "cuda-graph":      # as the engine runs it: every launch with the PDL attribute
        pdl_us = 1e6 * float(np.median(_time_graph(dev, lambda i, s: one(i, s, frozenset({runtime.PDL})),
                                                   max(per_batch, nsets), batches)))
    del arena, shared_arena
    t = float(np.median(ts))
    bw = traffic / t
    return {"median_us": t * 1e6, "p10_us": float(np.percentile(ts, 10)) * 1e6,
            "p90_us": float(np.percentile(ts, 90)) * 1e6, "spread_pct": 100 * float(np.percentile(ts, 90) -
                                                                                np.percentile(ts, 10)) / t,
            "pdl_us": pdl_us, "engine_us": pdl_us if pdl_us is not None else t * 1e6,
            "runs": batches, "launches_per_run": max(per_batch, nsets) if timing == "cuda-graph" else per_batch,
            "timing": timing, "buffer_sets": nsets,
            "working_set_bytes": nsets * touched, "shared_buffers": shared, "traffic_bytes": traffic, "tb_per_s": bw / 1e12,
            "pct_of_copy_bw": 100 * bw / copy_bw, "above_roofline": bool(bw > roofline(dev, copy_bw))}


def measure(dev: GpuHarness, ptx: str, variant: Variant, op: Op, cases: dict[str, dict[str, int]],
            copy_bw: float | None = None) -> dict:
    """Every given case timed; the summary is the case that moves the most bytes."""
    if not copy_bw:
        with dev.turn:
            copy_bw = copy_bandwidth(dev)
    module = dev.load_variant(variant, op, ptx)
    per_case = {name: time_case(dev, module, variant, op, dims, copy_bw) for name, dims in cases.items()}
    big = max(cases, key=lambda n: op.traffic_bytes(cases[n], variant.types))
    top = per_case[big]
    return {"device": dev.describe(), "copy_tb_per_s": copy_bw / 1e12, "case": big,
            "median_us": top["median_us"], "engine_us": top["engine_us"], "pct_of_copy_bw": top["pct_of_copy_bw"],
            "above_roofline": any(c["above_roofline"] for c in per_case.values()), "cases": per_case}


def add_ratios(results: list[dict]) -> None:
    """Each variant's time over the fastest variant of the same op and types, per case (in place)."""
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        if r.get("speed") and r["speed"].get("cases"):
            groups.setdefault((r["op"], tuple(sorted(r.get("types", {}).items()))), []).append(r)
    for rs in groups.values():
        for r in rs:
            r["speed"]["ratio_to_fastest"] = {}
            for case, c in r["speed"]["cases"].items():
                times = [o["speed"]["cases"][case]["median_us"] for o in rs if case in o["speed"]["cases"]
                         and not o["speed"]["cases"][case]["above_roofline"]]
                if times:
                    r["speed"]["ratio_to_fastest"][case] = c["median_us"] / min(times)
