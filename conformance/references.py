"""Float64 references: one function per op, named by the op's `reference` key. Each takes the inputs
(NumPy arrays of exact values, by param name: any float type, converted to float64 before any
arithmetic, or integers), the dims and the scalars, and returns the expected outputs by param name
(float64; an inout param under its own name); @reference registers it under its name. Row-wise ones run block by block of rows on the
conformance thread pool (each row's arithmetic is the same as on the whole array). The large ones (the gemv family, gemm, prefill)
take `xp`, the array module to compute in: NumPy, or CuPy when conformance runs on the GPU (IEEE float64 there too, in
another summation order); they may return its arrays (the caller brings them to the host)."""
from __future__ import annotations

import numpy as np

from .chunks import chunk_map

BLOCK = 1 << 16     # elements per block of rows
REFERENCES: dict = {}     # an op's `reference` key -> its function, filled by @reference
ERROR_SCALES: dict = {}   # an op's `reference` key -> sum_k |term_k| per output, filled by @error_scale


def reference(fn):
    """Register fn as the float64 reference named by its function name (an op's `reference` key); a
    name already registered is refused (a user's reference never replaces a built-in one)."""
    _register(REFERENCES, fn.__name__, fn)
    return fn


def error_scale(fn):
    """Register fn (named <reference>_abs) as the per-element sum of the absolute values of the terms an op's
    outputs sum (the scale of the fp32 accumulation error bound of an op with an `accumulation` entry)."""
    _register(ERROR_SCALES, fn.__name__.removesuffix("_abs"), fn)
    return fn


def _register(table: dict, name: str, fn) -> None:
    old = table.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
        raise ValueError(f"a float64 reference named {name!r} is already registered (by {old.__module__})")
    table[name] = fn


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def _by_rows(fn, **arrays) -> dict:
    """fn(**blocks of rows of the arrays) -> outputs, over consecutive blocks of leading-axis rows, joined."""
    arrays = {k: np.asarray(a) for k, a in arrays.items()}
    rows = len(next(iter(arrays.values())))
    width = max(int(np.prod(a.shape[1:])) for a in arrays.values())
    parts = chunk_map(lambda lo, hi: fn(**{k: a[lo:hi] for k, a in arrays.items()}), rows, max(1, BLOCK // max(1, width)))
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


@reference
def add(a, b, **_):
    return _by_rows(lambda a, b: {"out": _f64(a) + _f64(b)}, a=a, b=b)


def _rms(x, w, eps):
    x = _f64(x)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + float(eps)) * _f64(w)


@reference
def rms_norm(x, w, eps=1e-6, **_):
    return _by_rows(lambda x: {"y": _rms(x, w, eps)}, x=x)


@reference
def add_rms_norm(x, residual, w, eps=1e-6, **_):
    def rows(x, residual):
        s = _f64(residual) + _f64(x)
        return {"residual": s, "y": _rms(s, w, eps)}
    return _by_rows(rows, x=x, residual=residual)


def _silu_mul(gate_up, I):
    g, u = _f64(gate_up[..., :I]), _f64(gate_up[..., I:])
    with np.errstate(over="ignore"):          # exp(-g) = inf for very negative g: silu -> -0
        return {"out": g / (1.0 + np.exp(-g)) * u}


@reference
def silu_mul(gate_up, I, **_):
    return _by_rows(lambda gate_up: _silu_mul(gate_up, I), gate_up=gate_up)


def _on(xp, x):
    """x in float64 as an array of xp (converted there: a float32 input crosses to the GPU at its own size)."""
    return xp.asarray(x).astype(xp.float64)


def _matvec(xp, W, v, absolute=False):
    """W @ v (|W| @ |v| with absolute) in float64, computed in xp, back on the host. One BLAS call (it runs
    on every core itself): BLAS calls from the chunk pool's threads would each start their own threads."""
    W, v = _on(xp, W), _on(xp, v)
    y = xp.abs(W) @ xp.abs(v) if absolute else W @ v
    return y if xp is np else xp.asnumpy(y)


@reference
def gemv(W, x, xp=np, **_):
    return {"y": _matvec(xp, W, x)}


@reference
def gemv_swiglu(W, gate_up, I, xp=np, **_):
    """y = W (silu(g) * u): the activation in float64, not rounded (as the fused kernel keeps it in fp32)."""
    return {"y": _matvec(xp, W, _silu_mul(np.asarray(gate_up)[:2 * I], I)["out"])}


@reference
def rms_norm_gemv(W, x, w, eps=1e-6, xp=np, **_):
    """y = W xhat, xhat = x w / sqrt(mean(x^2) + eps) in float64 (not rounded, as the fused kernel)."""
    return {"y": _matvec(xp, W, _rms(x, w, eps))}


@reference
def gemv_residual(W, x, r, xp=np, **_):
    return {"r": _f64(r) + _matvec(xp, W, x)}


@reference
def rms_norm_gemv_swiglu(W, x, w, I, eps=1e-6, xp=np, **_):
    """out = silu(g) * u, (g, u) = W xhat (the gate rows, then the up rows), nothing rounded in between."""
    return _silu_mul(_matvec(xp, np.asarray(W)[:2 * I], _rms(x, w, eps)), I)


@error_scale
def rms_norm_gemv_swiglu_abs(W, x, w, I, eps=1e-6, xp=np, **_):
    """|silu'(g) u| S_g + |silu(g)| S_u, S = |W| |xhat| per row: the first-order reach of the fp32 errors
    of g and u (each <= gamma S) into out (the op's yaml)."""
    W, h = np.asarray(W)[:2 * I], _rms(x, w, eps)
    gu, S = _matvec(xp, W, h), _matvec(xp, W, h, absolute=True)
    g, u = gu[:I], gu[I:]
    with np.errstate(over="ignore"):
        sig = 1.0 / (1.0 + np.exp(-g))
    return {"out": np.abs(sig * (1.0 + g * (1.0 - sig)) * u) * S[:I] + np.abs(g * sig) * S[I:]}


@reference
def gemm(X, W, xp=np, **_):
    return {"Y": _on(xp, X) @ _on(xp, W).T}


@error_scale
def gemm_abs(X, W, xp=np, **_):
    """sum_k |X[t, k] W[n, k]| = (|X| |W|^T)[t, n], exact in float64 up to its own rounding (~2^-53 relative)."""
    return {"Y": xp.abs(_on(xp, X)) @ xp.abs(_on(xp, W)).T}


@reference
def embedding(table, ids, **_):
    return {"out": _f64(np.asarray(table)[np.asarray(ids, dtype=np.int64)])}   # the rows read, not the table


@reference
def gather_row(x, R, **_):
    return {"out": _f64(np.asarray(x)[R]).copy()}


@reference
def decode_advance(pos, **_):
    """The next decode step's position and attention length."""
    p = np.asarray(pos, dtype=np.int64) + 1
    return {"pos": p, "n": p + 1}


# ---- Qwen3 attention prologue and greedy sampling -------------------------------------------------

HEAD_DIM = 128


def rope_tables(S: int, theta: float = 1e6, head_dim: int = HEAD_DIM):
    """The cos/sin tables the qk_norm_rope ops take: [S, head_dim/2], cos(p * theta^(-2i/head_dim)),
    in float64 (round them once to f32 for the kernels)."""
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    ang = np.arange(S, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.cos(ang), np.sin(ang)


def _norm_rope(x, w, cos, sin, eps):
    """RMSNorm over the last axis (128) times w, then rotate_half RoPE with cos/sin [..., 64]."""
    n = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w
    h = n.shape[-1] // 2
    n1, n2 = n[..., :h], n[..., h:]
    return np.concatenate([n1 * cos - n2 * sin, n2 * cos + n1 * sin], axis=-1)


@reference
def qk_norm_rope_prefill(qkv, q_norm_w, k_norm_w, rope_cos, rope_sin, k_cache, v_cache, T, Hq, Hkv, start,
                         eps=1e-6, **_):
    eps = float(np.float32(eps))           # the value the kernel receives
    p = start + np.arange(T)

    def rows(qkv, p):
        c, s = _f64(np.asarray(rope_cos)[p])[:, None, :], _f64(np.asarray(rope_sin)[p])[:, None, :]
        return {"q": _norm_rope(_f64(qkv[:, :Hq]), _f64(q_norm_w), c, s, eps),
                "k": _norm_rope(_f64(qkv[:, Hq:Hq + Hkv]), _f64(k_norm_w), c, s, eps), "v": _f64(qkv[:, Hq + Hkv:])}
    new = _by_rows(rows, qkv=qkv, p=p)
    k_new, v_new = np.array(k_cache, dtype=np.float64), np.array(v_cache, dtype=np.float64)
    k_new[p], v_new[p] = new["k"], new["v"]
    return {"q_out": new["q"], "k_cache": k_new, "v_cache": v_new}


@reference
def qk_norm_rope_kv(qkv, pos, Hq, Hkv, **kw):
    out = qk_norm_rope_prefill(qkv=qkv[None], T=1, Hq=Hq, Hkv=Hkv, start=int(np.asarray(pos).ravel()[0]), **kw)
    return {**out, "q_out": out["q_out"][0]}


@reference
def argmax(logits, **_):
    """Lowest index of each row's maximum; NaN is never the maximum; a row of NaNs gives 0."""
    def rows(logits):
        x = _f64(logits)
        m = np.fmax.reduce(x, axis=-1)             # NaN-ignoring; NaN only for a row of NaNs
        hit = x == m[:, None]                      # never true at a NaN
        first = np.argmax(hit, axis=-1)
        return {"out": np.where(hit[np.arange(x.shape[0]), first], first, 0)}
    return _by_rows(rows, logits=logits)


# ---- flash-decoding: splits and their merge --------------------------------------------------------

def split_positions(n: int, P: int) -> list[range]:
    """The positions of each of the P splits of n cached positions: split p takes p, p + P, p + 2P, ..
    below n (cdiv(n - p, P) of them; empty when p >= n)."""
    return [range(p, n, P) for p in range(P)]


@reference
def attention_decode(q, k_cache, v_cache, n, Hq, Hkv, P, scale=0.08838834764831845, **_):
    """Per split and query head: lse = ln(sum exp(s_j)) and the softmax-weighted mean of v over the
    split's positions (-inf and 0 for an empty split), s_j = scale * q . k_j in float64."""
    n, G = int(np.asarray(n).ravel()[0]), Hq // Hkv
    q = _f64(q).reshape(Hkv, G, HEAD_DIM)
    scale = float(np.float32(scale))          # the value the kernel receives
    o = np.zeros((P, Hq, HEAD_DIM))
    lse = np.full((P, Hq), -np.inf)
    for p, pos in enumerate(split_positions(n, P)):
        if not pos:
            continue
        k, v = _f64(k_cache[pos.start:n:P]), _f64(v_cache[pos.start:n:P])     # [positions, Hkv, 128]
        s = scale * np.einsum("gqd,jgd->gqj", q, k)                  # [Hkv, G, C]
        m = s.max(axis=-1, keepdims=True)
        w = np.exp(s - m)
        tot = w.sum(axis=-1)
        o[p] = (np.einsum("gqj,jgd->gqd", w, v) / tot[..., None]).reshape(Hq, HEAD_DIM)
        lse[p] = (m[..., 0] + np.log(tot)).reshape(Hq)
    return {"o_part": o, "lse_part": lse}


@reference
def attention_decode_fused(q, k_cache, v_cache, n, Hq, Hkv, scale=0.08838834764831845, **_):
    """Per query head: softmax(scale * q . k_j) weighted mean of v_j over the first n positions of its
    KV head, in float64."""
    n, G = int(np.asarray(n).ravel()[0]), Hq // Hkv
    q = _f64(q).reshape(Hkv, G, HEAD_DIM)
    scale = float(np.float32(scale))          # the value the kernel receives
    k, v = _f64(k_cache[:n]), _f64(v_cache[:n])                   # [n, Hkv, 128]
    s = scale * np.einsum("gqd,jgd->gqj", q, k)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    out = np.einsum("gqj,jgd->gqd", w, v) / w.sum(axis=-1)[..., None]
    return {"out": out.reshape(Hq, HEAD_DIM)}


@reference
def attention_merge(o_part, lse_part, **_):
    """Splits weighted by exp(lse - max lse); a split with lse = -inf has weight 0 (its o_part unread)."""
    lse = _f64(lse_part)
    m = lse.max(axis=0)
    w = np.exp(lse - m)                                           # 0 where lse = -inf
    o = np.where(w[..., None] > 0, _f64(o_part), 0.0)
    return {"out": (w[..., None] * o).sum(axis=0) / w.sum(axis=0)[..., None]}


# ---- attention -------------------------------------------------------------------------------------

@reference
def attention_prefill(q, k_cache, v_cache, T, Hq, Hkv, start, scale=0.08838834764831845, xp=np, **_):
    """Causal GQA attention: query t (position start + t) of head h against cache rows 0 .. start + t
    of kv head h // (Hq // Hkv); exact softmax in float64. Blocks of query rows (on the thread pool with
    NumPy), each against the keys its last row sees (the rest are masked for every row of the block)."""
    scale = float(np.float32(scale))           # the value the kernel receives
    G, n = Hq // Hkv, start + T
    k = _on(xp, np.asarray(k_cache)[:n]).transpose(1, 2, 0)       # [Hkv, 128, n]
    v = _on(xp, np.asarray(v_cache)[:n]).transpose(1, 0, 2)       # [Hkv, n, 128]
    q = np.asarray(q)

    def rows(lo, hi):
        t, m = hi - lo, start + hi                                # m: the keys row hi - 1 sees
        qb = _on(xp, q[lo:hi]).reshape(t, Hkv, G, HEAD_DIM).transpose(1, 0, 2, 3).reshape(Hkv, t * G, HEAD_DIM)
        s = (qb @ k[:, :, :m]).reshape(Hkv, t, G, m) * scale
        masked = xp.arange(m)[None, :] > (start + xp.arange(lo, hi))[:, None]           # [t, m]
        s = xp.where(masked[None, :, None, :], -xp.inf, s)
        p = xp.exp(s - s.max(axis=-1, keepdims=True))
        o = (p.reshape(Hkv, t * G, m) @ v[:, :m]).reshape(Hkv, t, G, HEAD_DIM) / p.sum(axis=-1)[..., None]
        return o.transpose(1, 0, 2, 3).reshape(t, Hq, HEAD_DIM)
    if xp is np:
        step = max(1, (1 << 22) // max(1, Hq * n))     # about 4M scores per block
        return {"out": np.concatenate(chunk_map(rows, T, step))}
    step = max(1, (1 << 26) // max(1, Hq * n))         # 64M: 0.5 GB of scores a block on the GPU
    return {"out": xp.concatenate([rows(lo, min(T, lo + step)) for lo in range(0, T, step)])}
