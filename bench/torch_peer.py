"""The torch side of the benches: a call timed the way the conformance timing times kernels (captured
once in a CUDA graph over inputs rotated past the L2, CUDA events, the median of batches)."""
from __future__ import annotations

import math

import numpy as np


def graph_us(torch, call, per: int, batches: int = 21) -> float:
    """Median microseconds of one call(i), i = 0 .. per - 1 replayed from a CUDA graph (three warm-up
    calls on a side stream first)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            call(i)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(per):
            call(i)
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / per)
    return float(np.median(ts))


def linear_us(torch, T: int, N: int, K: int, dtype, l2_bytes: int, batches: int = 21, per_min: int = 8) -> float:
    """Median microseconds of cuBLAS through F.linear(X[T, K], W[N, K]) over weight copies past twice the L2."""
    nsets = max(1, math.ceil(2 * l2_bytes / (N * K * 2)))
    Ws = [torch.randn(N, K, device="cuda", dtype=dtype) for _ in range(nsets)]
    X = torch.randn(T, K, device="cuda", dtype=dtype)
    return graph_us(torch, lambda i: torch.nn.functional.linear(X, Ws[i % nsets]), max(nsets, per_min), batches)
