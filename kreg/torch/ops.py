"""The registry ops as functions of torch tensors in the shapes models use (leading dims flattened into
the contract's rows); each is one or two torch.ops.kreg calls, nothing computed beside them."""
from __future__ import annotations

import torch

from .errors import ContractError

kreg = torch.ops.kreg


def _rows(x: torch.Tensor, width: int | None = None) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1] if width is None else width)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dim (Qwen3RMSNorm), any leading dims."""
    return kreg.rms_norm(_rows(x), weight, eps).view(x.shape)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """residual += x (in place, rounded to its dtype); returns rms_norm of the fp32 sum."""
    if residual.shape != x.shape:
        raise ContractError(f"add_rms_norm: residual {tuple(residual.shape)} and x {tuple(x.shape)} differ")
    if not residual.is_contiguous():            # else the rows would be a copy, updated instead of it
        raise ContractError("add_rms_norm: residual must be contiguous (it is updated in place)")
    return kreg.add_rms_norm(_rows(x), residual.view(-1, residual.shape[-1]), weight, eps).view(x.shape)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up of the fused [..., 2*I] projection (gate first): [..., I]."""
    y = kreg.silu_mul(_rows(gate_up))
    return y.view(*gate_up.shape[:-1], y.shape[-1])


def linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight.T (weight [N, K] as nn.Linear stores it, no bias): gemv for one row, gemm for more."""
    K = x.shape[-1]
    rows = x.numel() // K if K else 0
    if rows == 1:
        y = kreg.gemv(weight, x.reshape(K))
    else:
        y = kreg.gemm(_rows(x), weight)
    return y.view(*x.shape[:-1], weight.shape[0])


def embedding(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """table[ids] for int32 ids of any shape."""
    return kreg.embedding(table, ids.reshape(-1)).view(*ids.shape, table.shape[-1])


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """The index (int32) of the largest logit of each row (the lowest on ties; NaN never chosen)."""
    out = kreg.argmax(_rows(logits))
    return out.view(logits.shape[:-1])


def attention_prefill(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, start: int,
                      scale: float = 128 ** -0.5) -> torch.Tensor:
    """Causal attention of T queries at positions start .. start+T-1 (q [T, Hq, 128]) over the token-major
    caches [S, Hkv, 128]: query t sees positions 0 .. start+t."""
    return kreg.attention_prefill(q, k_cache, v_cache, start, scale)


def attention_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, n: torch.Tensor,
                     splits: int = 1, scale: float = 128 ** -0.5) -> torch.Tensor:
    """One query token (q [Hq, 128]) over the first n[0] cached positions (n an int32 device scalar, so a
    CUDA graph serves every step), in `splits` flash-decoding splits merged by attention_merge."""
    o_part, lse_part = kreg.attention_decode(q, k_cache, v_cache, n, splits, scale)
    return kreg.attention_merge(o_part, lse_part, q.dtype)


def qk_norm_rope_kv(qkv, q_norm_w, k_norm_w, rope_cos, rope_sin, pos, k_cache, v_cache, eps: float = 1e-6):
    """One decode token's q/k RMSNorm and RoPE at position pos[0]; k and v written into row pos[0] of the
    caches (in place); returns q [Hq, 128]."""
    return kreg.qk_norm_rope_kv(qkv, q_norm_w, k_norm_w, rope_cos, rope_sin, pos, k_cache, v_cache, eps)


def qk_norm_rope_prefill(qkv, q_norm_w, k_norm_w, rope_cos, rope_sin, k_cache, v_cache, start: int,
                         eps: float = 1e-6):
    """qk_norm_rope_kv for T tokens at positions start .. start+T-1 (qkv [T, Hq + 2*Hkv, 128])."""
    return kreg.qk_norm_rope_prefill(qkv, q_norm_w, k_norm_w, rope_cos, rope_sin, k_cache, v_cache, start, eps)
