"""The float64 reference of the whole Qwen3 forward pass, built from the ops' float64 references
(conformance/references.py): the same weights the engine loads (its dtype's values, exactly), every
activation in float64. forward(ids) gives the logits of every position."""
from __future__ import annotations

import numpy as np

from kreg.conformance.dtypes import decode
from kreg.conformance.references import REFERENCES
from kreg.conformance.rope import rope_tables

from .config import Qwen3Config, load_config
from .weights import Checkpoint, load_globals, load_layer

SCALE = 1 / np.sqrt(128)


def causal_attention(q, k_cache, v_cache, start: int, scale: float = SCALE):
    """q [T, Hq, 128] at positions start..start+T-1 against cache rows 0..start+T-1 ([S, Hkv, 128]);
    query t sees positions <= start + t. The attention_prefill op's semantics, in float64."""
    ref = REFERENCES.get("attention_prefill")
    T, Hq, _ = q.shape
    Hkv = k_cache.shape[1]
    if ref is not None:
        return ref(q=q, k_cache=k_cache, v_cache=v_cache, T=T, Hq=Hq, Hkv=Hkv, S=k_cache.shape[0], start=start,
                   scale=scale)["out"]
    n, scale = start + T, float(np.float32(scale))          # the value a kernel receives
    k = np.repeat(k_cache[:n], Hq // Hkv, axis=1)            # [n, Hq, 128]
    v = np.repeat(v_cache[:n], Hq // Hkv, axis=1)
    s = np.einsum("thd,nhd->htn", q, k) * scale              # [Hq, T, n]
    s = np.where(np.arange(n)[None, None, :] <= start + np.arange(T)[None, :, None], s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("htn,nhd->thd", p, v)


class Reference:
    """The model's weights decoded to float64 (exactly the engine dtype's values) and the forward pass."""

    def __init__(self, model_dir, dtype: str | None = None):
        self.cfg: Qwen3Config = load_config(model_dir)
        dt = dtype or self.cfg.dtype
        ck = Checkpoint(model_dir)
        f64 = lambda d: {k: decode(v, dt) for k, v in d.items()}     # noqa: E731
        self.globals = f64(load_globals(ck, self.cfg, dt))
        self.layers = [f64(load_layer(ck, self.cfg, i, dt)) for i in range(self.cfg.num_hidden_layers)]

    def forward(self, ids) -> np.ndarray:
        """Logits [T, V] of every position of the sequence ids (positions 0..T-1)."""
        c, R = self.cfg, REFERENCES
        ids = np.asarray(ids, dtype=np.int64)
        T, H, Hq, Hkv, eps = len(ids), c.hidden_size, c.q_heads, c.kv_heads, c.rms_norm_eps
        cos, sin = rope_tables(T, c.rope_theta, yarn=c.yarn, scaling=c.scaling)
        x = R["embedding"](table=self.globals["embed"], ids=ids)["out"]          # the residual stream
        for w in self.layers:
            h = R["rms_norm"](x=x, w=w["in_norm"], eps=eps)["y"]
            qkv = (h @ w["qkv"].T).reshape(T, Hq + 2 * Hkv, 128)
            kc = np.zeros((T, Hkv, 128))
            r = R["qk_norm_rope_prefill"](qkv=qkv, q_norm_w=w["q_norm"], k_norm_w=w["k_norm"], rope_cos=cos,
                                          rope_sin=sin, k_cache=kc, v_cache=kc, T=T, Hq=Hq, Hkv=Hkv, start=0,
                                          eps=eps)
            attn = causal_attention(r["q_out"], r["k_cache"], r["v_cache"], 0).reshape(T, Hq * 128)
            r = R["add_rms_norm"](x=attn @ w["o"].T, residual=x, w=w["post_norm"], eps=eps)
            x = r["residual"]
            act = R["silu_mul"](gate_up=r["y"] @ w["gate_up"].T, I=c.kernel_intermediate)["out"]
            x = x + act @ w["down"].T
        h = R["rms_norm"](x=x, w=self.globals["norm"], eps=eps)["y"]
        return h @ self.globals["lm_head"].T

    def greedy(self, prompt, steps: int) -> list[int]:
        """`steps` greedy tokens after the prompt (the whole sequence recomputed each step)."""
        seq = list(prompt)
        for _ in range(steps):
            seq.append(int(np.argmax(self.forward(seq)[-1])))
        return seq[len(prompt):]
