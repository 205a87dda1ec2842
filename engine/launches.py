"""The launch lists of a decode step and of a prefill pass: every op of every layer bound to the
resident model's buffers (plan.OpKernel.launches -> checker/ptx/bind.py). Decode: T = 1, gemv (gemv_swiglu
for the activation and down projection where the plan has it), the qk_norm_rope_kv prologue at the
device position, split attention_decode + attention_merge over the device length n, and decode_advance
moving both on; where the plan has the fused ops (plan.fused_decode), the norms, residual adds and the
activation ride in the gemvs (fused_layers: 7 launches a layer; the lm_head stays rms_norm + gemv). Prefill: T tokens at `start`, gemm and
attention_prefill."""
from __future__ import annotations

from .plan import Launch, Plan, fused_decode
from .resident import NBYTES, Resident

ARGMAX_ALIGN = 8         # a vocabulary argmax does not take is padded up to a multiple of this


def argmax_width(p: Plan, V: int) -> int:
    """The row length argmax runs over for a vocabulary of V: V where the plan's argmax takes it, else V
    rounded up to a multiple of 8 (the logits buffer's tail past V holds -inf, written once by the
    engine and by nothing else: the lm_head writes V rows; a -inf never wins over a real logit). Only a
    row of NaNs gives an index past V: the embedding table has that many rows (zeros past V), so the
    next step's embedding reads ids within its contract (ids in [0, V - 1] of the table it is given)."""
    if not p["argmax"].op.dims_ok({"B": 1, "V": V}):
        return V
    return -(-V // ARGMAX_ALIGN) * ARGMAX_ALIGN


def layers(p: Plan, m: Resident, T: int, a: dict, start: int | None, splits: int) -> list[Launch]:
    """The input norm of layer 0, then every layer; ends with the final norm of the residual in a["h"]
    (a: the activation buffers by role; start None for a decode step)."""
    c, out = m.cfg, []
    H, I, Hq, Hkv, S, eps = c.hidden_size, c.kernel_intermediate, c.q_heads, c.kv_heads, m.S, c.rms_norm_eps
    decode = start is None

    def lin(W, x, y, N, K):
        if decode:
            return p["gemv"].launches({"N": N, "K": K}, {"W": W, "x": x, "y": y})
        return p["gemm"].launches({"T": T, "N": N, "K": K}, {"X": x, "W": W, "Y": y})

    out += p["rms_norm"].launches({"T": T, "H": H}, {"x": a["resid"], "w": m.layers[0]["in_norm"], "y": a["h"]},
                                  {"eps": eps})
    for i, w in enumerate(m.layers):
        kc, vc = m.cache[i]
        out += lin(w["qkv"], a["h"], a["qkv"], c.qkv_rows, H)
        ptrs = {"qkv": a["qkv"], "q_norm_w": w["q_norm"], "k_norm_w": w["k_norm"], **m.rope, "q_out": a["q"],
                "k_cache": kc, "v_cache": vc}
        if decode:
            out += p["qk_norm_rope_kv"].launches({"Hq": Hq, "Hkv": Hkv, "S": S}, ptrs | {"pos": a["pos"]}, {"eps": eps})
            out += p["attention_decode"].launches(
                {"Hq": Hq, "Hkv": Hkv, "S": S, "P": splits},
                {"q": a["q"], "k_cache": kc, "v_cache": vc, "n": a["n"], "o_part": a["o_part"], "lse_part": a["lse"]})
            out += p["attention_merge"].launches({"Hq": Hq, "P": splits},
                                                 {"o_part": a["o_part"], "lse_part": a["lse"], "out": a["attn"]})
        else:
            dims = {"T": T, "Hq": Hq, "Hkv": Hkv, "S": S, "start": start}
            out += p["qk_norm_rope_prefill"].launches(dims, ptrs, {"eps": eps})
            out += p["attention_prefill"].launches(dims, {"q": a["q"], "k_cache": kc, "v_cache": vc, "out": a["attn"]})
        out += lin(w["o"], a["attn"], a["o"], H, Hq * 128)
        out += p["add_rms_norm"].launches({"T": T, "H": H}, {"x": a["o"], "residual": a["resid"], "w": w["post_norm"],
                                                             "y": a["h"]}, {"eps": eps})
        out += lin(w["gate_up"], a["h"], a["gu"], 2 * I, H)
        if decode and "gemv_swiglu" in p.ops:           # the activation fused into the down projection
            out += p["gemv_swiglu"].launches({"N": H, "I": I}, {"W": w["down"], "gate_up": a["gu"], "y": a["mlp"]})
        else:
            out += p["silu_mul"].launches({"T": T, "I": I}, {"gate_up": a["gu"], "out": a["act"]})
            out += lin(w["down"], a["act"], a["mlp"], H, I)
        nxt = m.layers[i + 1]["in_norm"] if i + 1 < len(m.layers) else m.w["norm"]
        out += p["add_rms_norm"].launches({"T": T, "H": H}, {"x": a["mlp"], "residual": a["resid"], "w": nxt,
                                                             "y": a["h"]}, {"eps": eps})
    return out


def fused_layers(p: Plan, m: Resident, a: dict, splits: int) -> list[Launch]:
    """Every layer of a decode step with the fused ops, the residual in a["resid"] read by the normed gemvs
    and updated by gemv_residual: [rms_norm_gemv qkv] [qk_norm_rope_kv] [attention_decode]
    [attention_merge] [gemv_residual o] [rms_norm_gemv_swiglu gate_up] [gemv_residual down]."""
    c, out = m.cfg, []
    H, I, Hq, Hkv, S, eps = c.hidden_size, c.kernel_intermediate, c.q_heads, c.kv_heads, m.S, c.rms_norm_eps
    for i, w in enumerate(m.layers):
        kc, vc = m.cache[i]
        out += p["rms_norm_gemv"].launches({"N": c.qkv_rows, "K": H}, {"W": w["qkv"], "x": a["resid"],
                                                                     "w": w["in_norm"], "y": a["qkv"]}, {"eps": eps})
        out += p["qk_norm_rope_kv"].launches(
            {"Hq": Hq, "Hkv": Hkv, "S": S},
            {"qkv": a["qkv"], "q_norm_w": w["q_norm"], "k_norm_w": w["k_norm"], **m.rope, "q_out": a["q"],
             "k_cache": kc, "v_cache": vc, "pos": a["pos"]}, {"eps": eps})
        out += p["attention_decode"].launches(
            {"Hq": Hq, "Hkv": Hkv, "S": S, "P": splits},
            {"q": a["q"], "k_cache": kc, "v_cache": vc, "n": a["n"], "o_part": a["o_part"], "lse_part": a["lse"]})
        out += p["attention_merge"].launches({"Hq": Hq, "P": splits},
                                             {"o_part": a["o_part"], "lse_part": a["lse"], "out": a["attn"]})
        out += p["gemv_residual"].launches({"N": H, "K": Hq * 128}, {"W": w["o"], "x": a["attn"], "r": a["resid"]})
        out += p["rms_norm_gemv_swiglu"].launches({"I": I, "K": H}, {"W": w["gate_up"], "x": a["resid"],
                                                                     "w": w["post_norm"], "out": a["act"]},
                                                  {"eps": eps})
        out += p["gemv_residual"].launches({"N": H, "K": I}, {"W": w["down"], "x": a["act"], "r": a["resid"]})
    return out


def decode_buffers(m: Resident, splits: int, logits_width: int) -> dict:
    c = m.cfg
    spec = (("ids", 1, "i32"), ("pos", 1, "i32"), ("n", 1, "i32"), ("resid", c.hidden_size, None),
            ("h", c.hidden_size, None), ("qkv", c.qkv_rows, None), ("q", c.q_heads * 128, None),
            ("o_part", splits * c.q_heads * 128, "f32"), ("lse", splits * c.q_heads, "f32"),
            ("attn", c.q_heads * 128, None), ("o", c.hidden_size, None), ("gu", 2 * c.kernel_intermediate, None),
            ("act", c.kernel_intermediate, None), ("mlp", c.hidden_size, None))
    return {name: m.act(name, n, dt) for name, n, dt in spec} | {"logits": m.act("logits", logits_width)}


def decode(p: Plan, m: Resident, splits: int) -> list[Launch]:
    """One decode step: the token in bufs["ids"] at position bufs["pos"] (n = pos + 1 cached positions
    after it) -> logits, their argmax written back to bufs["ids"], pos and n advanced by one."""
    Va = argmax_width(p, m.cfg.vocab_size)
    c, a = m.cfg, decode_buffers(m, splits, Va)
    out = p["embedding"].launches({"T": 1, "V": Va, "H": c.hidden_size},
                                  {"table": m.w["embed"], "ids": a["ids"], "out": a["resid"]})
    if fused_decode(p):      # the lm_head after a lone rms_norm: the plain gemv streams it at the copy rate, the
        out += fused_layers(p, m, a, splits)            # normed one 11% slower (bench/results/fuse_gpu.txt)
        out += p["rms_norm"].launches({"T": 1, "H": c.hidden_size}, {"x": a["resid"], "w": m.w["norm"], "y": a["h"]},
                                      {"eps": c.rms_norm_eps})
        out += p["gemv"].launches({"N": c.vocab_size, "K": c.hidden_size}, {"W": m.w["lm_head"], "x": a["h"],
                                                                            "y": a["logits"]})
    else:
        out += layers(p, m, 1, a, None, splits)
        out += p["gemv"].launches({"N": c.vocab_size, "K": c.hidden_size}, {"W": m.w["lm_head"], "x": a["h"],
                                                                            "y": a["logits"]})
    out += p["argmax"].launches({"B": 1, "V": Va}, {"logits": a["logits"], "out": a["ids"]})
    out += p["decode_advance"].launches({"S": m.S}, {"pos": a["pos"], "n": a["n"]})
    return out


def prefill(p: Plan, m: Resident, T: int, start: int, all_logits: bool) -> list[Launch]:
    """A pass over the T tokens in bufs["pf.ids"] at positions start..: the last one's logits to
    bufs["logits"] and its argmax to bufs["ids"]; with all_logits every position's to bufs["pf.logits"]."""
    c = m.cfg
    H, V = c.hidden_size, c.vocab_size
    a = {k: m.act(f"pf.{k}", T * n) for k, n in (("resid", H), ("h", H), ("qkv", c.qkv_rows), ("q", c.q_heads * 128),
                                                 ("attn", c.q_heads * 128), ("o", H), ("gu", 2 * c.kernel_intermediate),
                                                 ("act", c.kernel_intermediate), ("mlp", H))}
    out = p["embedding"].launches({"T": T, "V": argmax_width(p, V), "H": H},
                                  {"table": m.w["embed"], "ids": m.bufs["pf.ids"], "out": a["resid"]})
    out += layers(p, m, T, a, start, 1)
    last = a["h"].ptr + (T - 1) * H * NBYTES[m.dtype]
    out += p["gemv"].launches({"N": V, "K": H}, {"W": m.w["lm_head"], "x": last, "y": m.bufs["logits"]})
    out += p["argmax"].launches({"B": 1, "V": argmax_width(p, V)}, {"logits": m.bufs["logits"], "out": m.bufs["ids"]})
    if all_logits:
        out += p["gemm"].launches({"T": T, "N": V, "K": H}, {"X": a["h"], "W": m.w["lm_head"],
                                                             "Y": m.act("pf.logits", T * V)})
    return out
