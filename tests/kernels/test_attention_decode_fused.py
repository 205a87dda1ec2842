"""The unsafe fused flash-decoding kernel (kernels/unsafe/attention_decode_fused) on the CPU emulator:
one launch (split + ticket + merge, or split + cluster merge) against the float64 attention of n
cached positions, ragged shapes (empty splits, GQA groups 1..8, a head batch of fewer than 4 heads);
the ticket form twice in a row (the counter the first launch leaves must serve the second), its
counter back at zero."""
from __future__ import annotations


import numpy as np
import pytest

from kreg import runtime
from kreg.checker.ptx.compile import compile_cuda
from kreg.conformance.dtypes import decode, encode

from helpers.paths import ROOT

SRC = ROOT / "kernels/unsafe/attention_decode_fused/attention_decode_fused.cu"
D = 128


def attention(q, k, v, n, Hq, Hkv, scale):
    """float64 softmax(scale q k^T) v over the first n positions, GQA."""
    G = Hq // Hkv
    out = np.zeros((Hq, D))
    for h in range(Hq):
        s = scale * (k[:n, h // G].astype(np.float64) @ q[h].astype(np.float64))
        w = np.exp(s - s.max())
        out[h] = w @ v[:n, h // G].astype(np.float64) / w.sum()
    return out


def _run(Hq, Hkv, S, P, n, options, warps=4, launches=2):
    """The fused kernel built with options, launched `launches` times; its bf16 out and the counter."""
    rng = np.random.default_rng(Hq * 1000 + S)
    q, k, v = (encode(rng.standard_normal(s), "bf16") for s in ((Hq, D), (S, Hkv, D), (S, Hkv, D)))
    scale = np.float32(D ** -0.5)
    dev = runtime.device("cpu")
    mod = dev.load(compile_cuda(SRC.read_text(), SRC.name, options).ptx)
    batches = -(-(Hq // Hkv) // 4)
    bufs = {name: dev.alloc(a.nbytes).copy_from(a) for name, a in
            (("q", q), ("k", k), ("v", v), ("n", np.array([n], np.int32)),
             ("counter", np.zeros(Hkv * batches, np.int32)))}
    o_part, lse_part, out = dev.alloc(P * Hq * D * 4), dev.alloc(P * Hq * 4), dev.alloc(Hq * D * 2)
    cfg = runtime.LaunchConfig((batches, P, Hkv), 32 * warps)
    want = attention(*(decode(a, "bf16") for a in (q, k, v)), n, Hq, Hkv, float(scale))
    for _ in range(launches):
        out.copy_from(np.full(Hq * D, 0x7fc0, np.uint16))                  # NaN until written
        mod.kernel("attention_decode_fused_bf16").launch(
            cfg, bufs["q"], bufs["k"], bufs["v"], bufs["n"], scale, o_part, lse_part, bufs["counter"], out,
            Hq, Hkv, S, P)
        got = decode(out.copy_to().view(np.uint16), "bf16").reshape(Hq, D)
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=0.0079)
        assert not bufs["counter"].copy_to().view(np.int32).any()


@pytest.mark.parametrize("Hq,Hkv,S,P,n", [(8, 2, 37, 5, 30), (5, 1, 9, 12, 3), (6, 2, 40, 3, 40)])
def test_fused_decode_emulated(Hq, Hkv, S, P, n):
    _run(Hq, Hkv, S, P, n, ["-DKREG_PREF=1"])


@pytest.mark.parametrize("Hq,Hkv,S,n,warps", [(8, 2, 37, 30, 4), (5, 1, 9, 3, 8), (12, 2, 70, 70, 8)])
def test_cluster_decode_emulated(Hq, Hkv, S, n, warps):
    """-DKREG_CL=8: the 8 splits of a head batch are one thread-block cluster and merge through
    distributed shared memory (mapa, ld.shared::cluster, barrier.cluster) in the emulator."""
    _run(Hq, Hkv, S, 8, n, ["-DKREG_CL=8", f"-DKREG_WARPS={warps}"], warps, launches=1)
