"""The decode step's time per kernel, as its graph runs it (not launches issued one by one from Python, whose
host gaps would count as kernel time). The step's launches are grouped by (op, variant, entry); each group,
every layer's launch in step order, is captured alone in a CUDA graph of its own (repeated until the graph
holds at least MIN_LAUNCHES launches, so one graph launch's overhead spreads over many kernels) and replayed
between CUDA events. A group's launches read each layer's own weights, so they stream from memory as in the
step (one launch replayed alone would find its weights in L2). The measured step (step_seconds) is the
captured step graph replayed the same way; the per-kernel times sum to it within the graph's overlap of
neighbouring kernels (PDL) and the L2 reuse between them. On the CPU (the emulator) each group runs once,
timed by the wall clock.

Profiling replays launches that write their outputs (and decode_advance, which moves the position on): the
step's activations are left overwritten; the position is restored (the device's pos and n), and the KV cache
rows past the position are rewritten by the next steps as always. Run it after a generation: the next
generate() prefills anew."""
from __future__ import annotations

import time

MIN_LAUNCHES = 64           # launches per profiling graph (a group repeated up to at least this many)


def groups(step) -> dict[tuple, list]:
    """The step's launches by (op, variant, entry), in the order of their first launch."""
    out: dict[tuple, list] = {}
    for ln in step:
        out.setdefault((ln.op, ln.variant, ln.kernel.entry), []).append(ln)
    return out


def _seconds_per_replay(dev, graph, replays: int) -> float:
    """One replay of a captured graph, the mean of `replays` back to back after one to warm up: CUDA events
    on the GPU, the wall clock on the CPU."""
    s = dev.default_stream
    if dev.kind == "gpu":
        cp = dev.cp
        graph.replay(s)
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(s.handle)
        for _ in range(replays):
            graph.replay(s)
        b.record(s.handle)
        b.synchronize()
        return cp.cuda.get_elapsed_time(a, b) / 1e3 / replays
    t = time.perf_counter()
    for _ in range(replays):
        graph.replay(s)
    return (time.perf_counter() - t) / replays


def profile(eng, replays: int = 20) -> list[dict]:
    """Per (op, variant, entry) of the engine's decode step: launches per step and microseconds per step."""
    dev, gpu = eng.dev, eng.dev.kind == "gpu"
    room = eng.S - 1 - eng.pos                     # steps decode_advance may take and keep pos in [0, S - 1]
    if room < 2:
        from .errors import EngineError
        raise EngineError("no room left in the KV cache to profile the decode step")
    eng._capture_step()                            # vendor libraries set up outside any capture
    eng._restore_position()
    out = []
    for (op, variant, entry), lns in groups(eng.step).items():
        reps, n = (-(-MIN_LAUNCHES // len(lns)), replays) if gpu else (1, 1)
        if op == "decode_advance":                 # each launch moves pos on: warm-up + n replays of reps
            reps = max(1, min(reps, room // (n + 1)))
            n = min(n, room // reps - 1)
        graph = dev.capture(lambda s, lns=lns, reps=reps: [ln.run(s) for _ in range(reps) for ln in lns])
        sec = _seconds_per_replay(dev, graph, n) / reps
        eng._restore_position()
        out.append({"op": op, "variant": variant, "entry": entry, "launches_per_step": len(lns),
                    "us_per_step": 1e6 * sec})
    return out


def step_bytes(eng) -> dict[tuple[str, str], int]:
    """Bytes each (op, variant) of the decode step must move per step: the op's traffic_bytes (every input
    read once, outputs written once; gathers and KV writes their rows) at each launch's dims, summed over
    the layers: weights, activations, and the KV cache attention_decode reads up to the engine's position
    (the n = pos + 1 rows it attends over, not the cache's S)."""
    from .contracts import decode_calls
    out: dict[tuple[str, str], int] = {}
    for name, op, dims in decode_calls(eng.plan, eng.cfg, eng.dtype, eng.S, eng.P):
        v = eng.plan[name].at(dims).entry.variant
        moved = dims | {"S": min(dims["S"], eng.pos + 1)} if name == "attention_decode" else dims
        out[(name, v.name)] = out.get((name, v.name), 0) + op.traffic_bytes(moved, v.types)
    return out


def step_seconds(eng, replays: int = 20) -> float:
    """The decode step's measured time: its captured graph replayed back to back (each replay a real step:
    the position moves on and is restored after)."""
    gpu = eng.dev.kind == "gpu"
    n = replays if gpu else 1
    if eng.pos + n + 1 >= eng.S:
        from .errors import EngineError
        raise EngineError(f"no room left in the KV cache to time {n + 1} decode steps from position {eng.pos}")
    eng._capture_step()
    eng._restore_position()
    try:
        return _seconds_per_replay(eng.dev, eng.graph, n)
    finally:
        eng._restore_position()
