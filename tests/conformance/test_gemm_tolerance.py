"""The gemm op's tolerance (kernels/ops/gemm.yaml, conformance/tolerance.py): atol + rtol |y| + (1 + rtol)
gamma sum_k |x_k w_k|, gamma = 3 K u / (1 - 3 K u). A model of tensor-core accumulation (blocks of 16
products plus the fp32 accumulator aligned to the largest exponent and truncated to 24 bits, then
truncated to fp32: no extra bits, the pessimistic end of the model) passes at the K of the Qwen3 down
projections; wrong results (a dropped or doubled k tile, a wrong
row, a wrong column) fail it."""
import numpy as np
import pytest

from kreg.conformance.dtypes import decode, encode
from kreg.conformance.numerics import compare
from kreg.conformance.references import REFERENCES
from kreg.conformance.tolerance import error_scales, gamma, tolerance_for
from kreg.registry.catalog import load_catalog

OP = load_catalog().ops["gemm"]


def inputs(T, N, K, dt, seed=0):
    rng = np.random.default_rng(seed)
    return (decode(encode(rng.standard_normal((T, K)), dt), dt).astype(np.float64),
            decode(encode(rng.standard_normal((N, K)), dt), dt).astype(np.float64))


def _rz32(x):
    """x (float64) to fp32 rounding toward zero."""
    f = x.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(x)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f.astype(np.float64)


def tensor_core_model(X, W, nb=16):
    """fp32 accumulation as the yaml models a tensor core: per block of nb products plus the accumulator,
    every addend truncated to the ulp of the largest one at 24 bits, the sum truncated to fp32."""
    acc = np.zeros((X.shape[0], W.shape[0]))
    for k0 in range(0, X.shape[1], nb):
        terms = np.concatenate([acc[..., None], X[:, None, k0:k0 + nb] * W[None, :, k0:k0 + nb]], axis=-1)
        big = np.max(np.abs(terms), axis=-1, keepdims=True)
        ulp = np.exp2(np.floor(np.log2(np.where(big > 0, big, 1))) - 23)
        acc = _rz32(np.sum(np.trunc(terms / ulp) * ulp, axis=-1))
    return acc


def check(got32, X, W, dt):
    """compare() of fp32 results rounded once to dt against the float64 reference, as conformance does."""
    T, K = X.shape
    N = W.shape[0]
    dims = {"T": T, "N": N, "K": K}
    want = REFERENCES["gemm"](X=X, W=W)["Y"]
    scale = error_scales(OP, {"X": X, "W": W}, dims)["Y"]
    got = decode(encode(got32, dt), dt)
    return compare("Y", got, want, dt, tolerance_for(OP, dt, dims), scale=scale)


def test_gamma_is_3_K_u_over_1_minus_3_K_u():
    u = 2.0 ** -24
    assert gamma(OP, {"T": 1, "N": 1, "K": 12288}) == pytest.approx(3 * 12288 * u / (1 - 3 * 12288 * u), rel=1e-12)
    assert OP.tolerance["bf16"]["rtol"] == 2.0 ** -8 and OP.tolerance["f16"]["rtol"] == 2.0 ** -11


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_the_tensor_core_model_passes_at_K_12288(dt):
    X, W = inputs(16, 24, 12288, dt)
    got32 = tensor_core_model(X, W)
    why, stats = check(got32, X, W, dt)
    assert why == [] and stats["worst"]["err_over_tol"] < 0.5
    # its fp32 error is real (not a round-to-nearest sum) and beyond the old atol on some outputs
    want = X @ W.T
    assert np.max(np.abs(got32 - want)) > 2e-3 / 4


@pytest.mark.parametrize("K", [264, 2560])
def test_round_to_nearest_fp32_sums_in_any_order_pass(K):
    X, W = inputs(20, 30, K, "bf16", seed=1)
    p = (X[:, None, :] * W[None, :, :]).astype(np.float32)
    for order in (np.arange(K), np.random.default_rng(2).permutation(K)):
        acc = np.zeros((20, 30), np.float32)
        for k in order:
            acc += p[..., k]
        assert check(acc.astype(np.float64), X, W, "bf16")[0] == []


@pytest.mark.parametrize("K,T,N", [(264, 33, 40), (2560, 64, 64), (4096, 48, 48)])
def test_a_dropped_k_tile_fails(K, T, N):
    X, W = inputs(T, N, K, "bf16", seed=3)
    keep = np.ones(K, bool)
    keep[K // 2:K // 2 + 16] = False                              # one 16-wide k tile never accumulated
    why, _ = check(X[:, keep] @ W[:, keep].T, X, W, "bf16")
    assert why and "elements outside" in why[0]


def test_a_dropped_32_wide_k_tile_fails_at_K_12288():
    """At K = 12288 the bound is ~17 typical products wide: a 32-wide tile (~5.7 of them) is caught on
    a few tenths of a percent of the outputs, so on any output of realistic size."""
    X, W = inputs(128, 256, 12288, "bf16", seed=4)
    keep = np.ones(12288, bool)
    keep[6000:6032] = False
    why, _ = check(X[:, keep] @ W[:, keep].T, X, W, "bf16")
    assert why and "elements outside" in why[0]


@pytest.mark.parametrize("K", [264, 12288])
def test_a_doubled_k_tile_a_wrong_row_and_a_wrong_column_fail(K):
    X, W = inputs(16, 24, K, "f16", seed=5)
    Y = X @ W.T
    doubled = Y + X[:, :64] @ W[:, :64].T
    row = Y.copy()
    row[3] = Y[4]
    col = Y.copy()
    col[:, 7] = Y[:, 8]
    for bad in ((doubled,) if K < 1000 else ()) + (row, col):
        why, _ = check(bad, X, W, "f16")
        assert why and "elements outside" in why[0]
