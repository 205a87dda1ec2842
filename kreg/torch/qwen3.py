"""Run a Hugging Face transformers Qwen3 model on kreg's verified kernels, by module replacement (no
edit of transformers' source):

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16, device_map="cuda")
    kreg.torch.qwen3.swap(model)          # every RMSNorm, MLP, Linear and the attention now kreg ops

Each Qwen3RMSNorm (the layer norms, q_norm and k_norm) becomes rms_norm; the token embedding embedding; each MLP one gemm/gemv on the
fused gate_up weight, silu_mul and the down projection; every other bias-free nn.Linear (q, k, v, o,
lm_head) linear (gemv for one row, gemm for more); attention the causal attention_prefill kernel over
the whole cache (decode steps too: start = cached - new), registered as transformers attention
implementation "kreg". RoPE and the KV cache stay transformers' own. The attention takes batch 1
without padding (a mask other than causal stops the stream by torch._assert_async); any other layout
or dtype is refused by the op contracts, never run elsewhere."""
from __future__ import annotations

import torch
from torch import nn

from . import ops
from .errors import ContractError

ATTENTION = "kreg"


class KregRMSNorm(nn.Module):
    def __init__(self, norm: nn.Module):
        super().__init__()
        self.weight, self.eps = norm.weight, float(norm.variance_epsilon)

    def forward(self, x):
        return ops.rms_norm(x.contiguous(), self.weight, self.eps)


class KregLinear(nn.Module):
    def __init__(self, linear: nn.Linear):
        super().__init__()
        if linear.bias is not None:
            raise ContractError("kreg linear has no bias term: this Linear has one")
        self.weight = linear.weight

    def forward(self, x):
        return ops.linear(x.contiguous(), self.weight)


class KregEmbedding(nn.Module):
    def __init__(self, emb: nn.Embedding):
        super().__init__()
        self.weight = emb.weight

    def forward(self, ids):
        return ops.embedding(ids.to(torch.int32), self.weight)


class KregMLP(nn.Module):
    """down(silu(gate(x)) * up(x)) as linear on the fused [gate; up] weight, silu_mul, linear."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        if getattr(mlp.config, "hidden_act", "silu") != "silu":
            raise ContractError(f"kreg silu_mul is SwiGLU: this MLP's activation is {mlp.config.hidden_act}")
        self.gate_up = nn.Parameter(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]).detach(),
                                    requires_grad=False)
        self.down = KregLinear(mlp.down_proj)

    def forward(self, x):
        return self.down(ops.silu_mul(ops.linear(x.contiguous(), self.gate_up)))


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, sliding_window=None, **_):
    """transformers' attention interface: query [B, Hq, T, D], key/value [B, Hkv, S, D] (the whole cache,
    the new positions last) -> ([B, T, Hq, D], None), by the causal attention_prefill kernel."""
    B, Hq, T, D = query.shape
    S = key.shape[2]
    if B != 1 or sliding_window or dropout:
        raise ContractError(f"kreg attention runs batch 1, causal, no sliding window, no dropout (got batch {B}, "
                            f"window {sliding_window}, dropout {dropout})")
    if attention_mask is not None:          # only a plain causal mask: query t sees positions <= S - T + t
        allowed = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
        want = torch.ones(T, S, dtype=torch.bool, device=query.device).tril(S - T)
        torch._assert_async((allowed[..., -S:] == want).all(), "kreg attention: the mask is not causal")
    q = query[0].transpose(0, 1).contiguous()
    k, v = key[0].transpose(0, 1).contiguous(), value[0].transpose(0, 1).contiguous()
    out = ops.attention_prefill(q, k, v, S - T, float(scaling if scaling is not None else D ** -0.5))
    return out.unsqueeze(0), None


def register() -> None:
    """Make "kreg" a transformers attention implementation (and its mask: sdpa's, None when causal)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    AttentionInterface.register(ATTENTION, attention)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)


def swap(model: nn.Module) -> nn.Module:
    """Replace the model's RMSNorms, MLPs, bias-free Linears and embedding by kreg modules and select the kreg
    attention, in place; returns the model. A layer kreg cannot run is refused (ContractError)."""
    register()
    cfg = model.config
    if getattr(cfg, "head_dim", 128) != 128:
        raise ContractError(f"kreg attention kernels take head_dim 128, this model has {cfg.head_dim}")
    for name, child in list(model.named_modules()):
        for attr, sub in list(child.named_children()):
            kind = type(sub).__name__
            if kind.endswith("RMSNorm"):
                setattr(child, attr, KregRMSNorm(sub))
            elif kind.endswith("MLP"):
                setattr(child, attr, KregMLP(sub))
            elif isinstance(sub, nn.Linear) and not type(child).__name__.endswith("MLP"):
                setattr(child, attr, KregLinear(sub))
            elif isinstance(sub, nn.Embedding):
                setattr(child, attr, KregEmbedding(sub))
    model.set_attn_implementation(ATTENTION)
    return model
