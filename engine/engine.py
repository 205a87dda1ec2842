"""The engine: weights and a static KV cache on the device, a one-pass prefill, and the decode step
captured once as a graph and replayed (the token id stays on the device: argmax writes the buffer the
next step's embedding reads; the position and attention length are device scalars the host sets before
each replay). Every launch is a variant of the plan (plan.py), bound through checker/bind.py."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from kreg import runtime
from kreg.conformance.dtypes import decode, encode
from kreg.conformance.references import rope_tables

from . import plan as P
from .config import load_config
from .errors import EngineError
from .sampling import Sampling, sample
from .weights import Checkpoint, load_globals, load_layer

CPU_MAX_COST = 200_000_000      # the emulator's step budget per launch (the engine's kernels are proven)


@dataclass
class Generation:
    prompt_tokens: int
    tokens: list[int] = field(default_factory=list)
    stopped: str = "length"             # "length" | "eos"
    prefill_s: float = 0.0
    decode_s: float = 0.0

    @property
    def decode_tok_s(self) -> float | None:
        n = len(self.tokens) - 1
        return n / self.decode_s if n > 0 and self.decode_s > 0 else None


class Engine:
    def __init__(self, model_dir, device: str = "gpu", profile: str = "safe-only", dtype: str | None = None,
                 max_seq: int | None = None, plan: P.Plan | None = None):
        self.cfg = cfg = load_config(model_dir)
        self.dtype = dtype or cfg.dtype
        if self.dtype not in ("bf16", "f16"):
            raise EngineError(f"dtype {self.dtype!r} is not supported (bf16, f16)")
        try:
            self.dev = plan.device if plan else runtime.device(device, **({"max_cost": CPU_MAX_COST}
                                                                          if device == "cpu" else {}))
        except Exception as e:
            raise EngineError(f"cannot open --device {device}: {type(e).__name__}: {e}", exit_code=3) from None
        self.tokenizer_dir = model_dir
        ck = Checkpoint(model_dir)                  # file problems surface before any kernel is compiled
        self.plan = plan or P.from_profile(profile, self.dev, self.dtype)
        self.S = S = min(max_seq or 4096, cfg.max_position_embeddings)
        self.P = self._splits()
        self.bufs: dict[str, runtime.Buffer] = {}
        g = load_globals(ck, cfg, self.dtype)
        self.w = {k: self._upload(f"w.{k}", v) for k, v in g.items() if k != "lm_head"}
        self.w["lm_head"] = self.w["embed"] if g["lm_head"] is g["embed"] else self._upload("w.lm_head", g["lm_head"])
        self.layers = [{k: self._upload(f"l{i}.{k}", v) for k, v in load_layer(ck, cfg, i, self.dtype).items()}
                       for i in range(cfg.num_hidden_layers)]
        cos, sin = rope_tables(S, cfg.rope_theta)
        self.rope = {"rope_cos": self._upload("rope_cos", cos.astype(np.float32)),
                     "rope_sin": self._upload("rope_sin", sin.astype(np.float32))}
        kv = S * cfg.kv_heads * 128 * 2
        self.cache = [(self.dev.alloc(kv, f"k{i}"), self.dev.alloc(kv, f"v{i}")) for i in range(cfg.num_hidden_layers)]
        self.pos = 0
        # the most tokens one prefill pass may take: the smallest T range of the prefill ops
        self.prefill_chunk = min(int(self.plan[op].op.dims["T"][1]) for op in ("gemm", "attention_prefill",
                                                                              "qk_norm_rope_prefill", "embedding"))
        self._decode_buffers()
        self.step = self._decode_launches()
        self.graph = None

    # ---- setup --------------------------------------------------------------------------------
    def _upload(self, name, host: np.ndarray) -> runtime.Buffer:
        return self.dev.alloc(host.nbytes, name).copy_from(host)

    def _splits(self) -> int:
        """P, the attention_decode splits: on the GPU enough blocks to fill it (two per SM over the
        heads), at most one per 64 cached positions; on the CPU 4 (so the tests see several splits,
        empty ones included while the context is short)."""
        cdiv = lambda a, b: -(-a // b)                   # noqa: E731
        if self.dev.kind != "gpu":
            return max(1, min(4, self.S))
        sms = self.dev.cp.cuda.Device().attributes["MultiProcessorCount"]
        return max(1, min(cdiv(2 * sms, self.cfg.q_heads), cdiv(self.S, 64), 1024))

    def _act(self, name, n, dtype=None) -> runtime.Buffer:
        b = self.bufs.get(name)
        size = n * P.nbytes(dtype or self.dtype)
        if b is None or b.nbytes < size:
            b = self.bufs[name] = self.dev.alloc(size, name)
        return b

    def _decode_buffers(self):
        c = self.cfg
        for name, n, dt in (("ids", 1, "i32"), ("pos", 1, "i32"), ("n", 1, "i32"), ("resid", c.hidden_size, None),
                            ("h", c.hidden_size, None), ("qkv", c.qkv_rows, None), ("q", c.q_heads * 128, None),
                            ("o_part", self.P * c.q_heads * 128, "f32"), ("lse", self.P * c.q_heads, "f32"),
                            ("attn", c.q_heads * 128, None), ("o", c.hidden_size, None),
                            ("gu", 2 * c.intermediate_size, None), ("act", c.intermediate_size, None),
                            ("mlp", c.hidden_size, None), ("logits", c.vocab_size, None)):
            self._act(name, n, dt)

    def _layer_launches(self, T: int, a: dict, start: int | None) -> list[P.Launch]:
        """Every layer of a step over T tokens (decode: T = 1 and start None, gemv and decode attention;
        prefill: gemm and prefill attention at `start`); ends with the final norm in a["h"]."""
        c, p, out = self.cfg, self.plan, []
        H, I, Hq, Hkv, S, eps = c.hidden_size, c.intermediate_size, c.q_heads, c.kv_heads, self.S, c.rms_norm_eps
        decode = start is None

        def lin(W, x, y, N, K):
            if decode:
                return p["gemv"].launches({"N": N, "K": K}, {"W": W, "x": x, "y": y})
            return p["gemm"].launches({"T": T, "N": N, "K": K}, {"X": x, "W": W, "Y": y})

        out += p["rms_norm"].launches({"T": T, "H": H}, {"x": a["resid"], "w": self.layers[0]["in_norm"],
                                                         "y": a["h"]}, {"eps": eps})
        for i, w in enumerate(self.layers):
            kc, vc = self.cache[i]
            out += lin(w["qkv"], a["h"], a["qkv"], c.qkv_rows, H)
            ptrs = {"qkv": a["qkv"], "q_norm_w": w["q_norm"], "k_norm_w": w["k_norm"], **self.rope, "q_out": a["q"],
                    "k_cache": kc, "v_cache": vc}
            if decode:
                out += p["qk_norm_rope_kv"].launches({"Hq": Hq, "Hkv": Hkv, "S": S}, ptrs | {"pos": a["pos"]},
                                                     {"eps": eps})
                out += p["attention_decode"].launches(
                    {"Hq": Hq, "Hkv": Hkv, "S": S, "P": self.P},
                    {"q": a["q"], "k_cache": kc, "v_cache": vc, "n": a["n"], "o_part": a["o_part"], "lse_part": a["lse"]})
                out += p["attention_merge"].launches({"Hq": Hq, "P": self.P}, {"o_part": a["o_part"],
                                                                              "lse_part": a["lse"], "out": a["attn"]})
            else:
                dims = {"T": T, "Hq": Hq, "Hkv": Hkv, "S": S, "start": start}
                out += p["qk_norm_rope_prefill"].launches(dims, ptrs, {"eps": eps})
                out += p["attention_prefill"].launches(dims, {"q": a["q"], "k_cache": kc, "v_cache": vc,
                                                              "out": a["attn"]})
            out += lin(w["o"], a["attn"], a["o"], H, Hq * 128)
            out += p["add_rms_norm"].launches({"T": T, "H": H}, {"x": a["o"], "residual": a["resid"],
                                                                 "w": w["post_norm"], "y": a["h"]}, {"eps": eps})
            out += lin(w["gate_up"], a["h"], a["gu"], 2 * I, H)
            out += p["silu_mul"].launches({"T": T, "I": I}, {"gate_up": a["gu"], "out": a["act"]})
            out += lin(w["down"], a["act"], a["mlp"], H, I)
            nxt = self.layers[i + 1]["in_norm"] if i + 1 < len(self.layers) else self.w["norm"]
            out += p["add_rms_norm"].launches({"T": T, "H": H}, {"x": a["mlp"], "residual": a["resid"], "w": nxt,
                                                                 "y": a["h"]}, {"eps": eps})
        return out

    def _decode_launches(self) -> list[P.Launch]:
        c, p, a = self.cfg, self.plan, self.bufs
        out = p["embedding"].launches({"T": 1, "V": c.vocab_size, "H": c.hidden_size},
                                      {"table": self.w["embed"], "ids": a["ids"], "out": a["resid"]})
        out += self._layer_launches(1, a, None)
        out += p["gemv"].launches({"N": c.vocab_size, "K": c.hidden_size},
                                  {"W": self.w["lm_head"], "x": a["h"], "y": a["logits"]})
        out += p["argmax"].launches({"B": 1, "V": c.vocab_size}, {"logits": a["logits"], "out": a["ids"]})
        return out

    # ---- running ------------------------------------------------------------------------------
    def _run(self, launches):
        for ln in launches:
            ln.run()

    def prefill(self, ids, all_logits: bool = False) -> np.ndarray | None:
        """Run the prompt ids at positions pos..pos+T-1 in one pass (KV cache rows written); the last
        position's logits go to the logits buffer and its argmax to the token id buffer. With
        all_logits, returns the logits of every position ([T, V] float64) as well."""
        c, p = self.cfg, self.plan
        T, start, H = len(ids), self.pos, c.hidden_size
        if T < 1:
            raise EngineError("an empty prompt: nothing to prefill")
        if start + T > self.S:
            raise EngineError(f"the context ({start + T} tokens) is longer than the KV cache ({self.S} positions; "
                              "raise --max-seq)")
        a = {k: self._act(f"pf.{k}", T * n) for k, n in (("resid", H), ("h", H), ("qkv", c.qkv_rows),
                                                         ("q", c.q_heads * 128), ("attn", c.q_heads * 128),
                                                         ("o", H), ("gu", 2 * c.intermediate_size),
                                                         ("act", c.intermediate_size), ("mlp", H))}
        a["ids"] = self._act("pf.ids", T, "i32").copy_from(np.asarray(ids, dtype=np.int32))
        if np.max(ids) >= c.vocab_size or np.min(ids) < 0:
            raise EngineError(f"token id {int(np.max(ids))} is outside the vocabulary ({c.vocab_size})")
        launches = p["embedding"].launches({"T": T, "V": c.vocab_size, "H": H},
                                           {"table": self.w["embed"], "ids": a["ids"], "out": a["resid"]})
        launches += self._layer_launches(T, a, start)
        last = a["h"].ptr + (T - 1) * H * P.nbytes(self.dtype)
        launches += p["gemv"].launches({"N": c.vocab_size, "K": H}, {"W": self.w["lm_head"], "x": last,
                                                                     "y": self.bufs["logits"]})
        launches += p["argmax"].launches({"B": 1, "V": c.vocab_size}, {"logits": self.bufs["logits"],
                                                                       "out": self.bufs["ids"]})
        full = None
        if all_logits:
            full = self._act("pf.logits", T * c.vocab_size)
            launches += p["gemm"].launches({"T": T, "N": c.vocab_size, "K": H},
                                           {"X": a["h"], "W": self.w["lm_head"], "Y": full})
        self._run(launches)
        self.pos = start + T
        if full is not None:
            return self._read(full, T * c.vocab_size).reshape(T, c.vocab_size)
        return None

    def decode_step(self) -> None:
        """One token through the captured graph: the token in the ids buffer at position pos."""
        if self.pos >= self.S:
            raise EngineError(f"the context is longer than the KV cache ({self.S} positions; raise --max-seq)")
        self.bufs["pos"].copy_from(np.array([self.pos], dtype=np.int32))
        self.bufs["n"].copy_from(np.array([self.pos + 1], dtype=np.int32))
        if self.graph is None:
            # a library routine may set itself up on its first call, which a capture must not see: run
            # the step's vendor launches once (they write only buffers the step itself rewrites)
            for ln in self.step:
                if self.plan[ln.op].entry.variant.vendor:
                    ln.run()
            self.dev.sync()
            self.graph = self.dev.capture(lambda s: [ln.run(s) for ln in self.step])
        self.graph.replay(self.dev.default_stream)
        self.pos += 1

    def _read(self, buf, n, dtype=None) -> np.ndarray:
        dt = dtype or self.dtype
        raw = buf.copy_to(0, n * P.nbytes(dt)).view(np.int32 if dt == "i32" else np.uint16)
        return raw.astype(np.int64) if dt == "i32" else decode(raw, dt)

    def logits(self) -> np.ndarray:
        """The last step's logits (float64 of the device's values)."""
        return self._read(self.bufs["logits"], self.cfg.vocab_size)

    def token(self) -> int:
        return int(self._read(self.bufs["ids"], 1, "i32")[0])

    def set_token(self, t: int) -> None:
        self.bufs["ids"].copy_from(np.array([t], dtype=np.int32))

    def generate(self, prompt_ids, max_new_tokens: int = 32, sampling: Sampling = Sampling(), eos=(151645, 151643),
                 on_token=None) -> Generation:
        """Prefill the prompt, then decode up to max_new_tokens tokens (stopping after an EOS);
        on_token(token) is called as each arrives (streaming)."""
        if len(prompt_ids) + max_new_tokens > self.S + 1:
            raise EngineError(f"the prompt ({len(prompt_ids)} tokens) plus --max-new-tokens {max_new_tokens} is "
                              f"longer than the KV cache ({self.S} positions; raise --max-seq)")
        rng = np.random.default_rng(sampling.seed)
        g = Generation(len(prompt_ids))
        self.pos = 0
        t0 = time.perf_counter()
        for lo in range(0, len(prompt_ids), self.prefill_chunk):     # one pass per chunk the ops allow
            self.prefill(prompt_ids[lo:lo + self.prefill_chunk])
        for i in range(max_new_tokens):
            if i:
                self.decode_step()
            if sampling.greedy:
                tok = self.token()
            else:
                tok = sample(self.logits(), sampling, rng)
                self.set_token(tok)
            if i == 0:
                g.prefill_s = time.perf_counter() - t0
                t0 = time.perf_counter()
            g.tokens.append(tok)
            if on_token:
                on_token(tok)
            if tok in eos:
                g.stopped = "eos"
                break
        g.decode_s = time.perf_counter() - t0
        return g

    def kernel_profile(self, steps: int = 3) -> list[dict]:
        """Per-kernel time of the decode step, its launches run one by one (not from the graph) at the
        current position: per op and variant, the launches per step and the mean microseconds per step."""
        if self.pos + steps > self.S:
            raise EngineError("no room left in the KV cache to profile the decode step")
        times: dict[tuple, list] = {}
        for _ in range(steps):
            self.bufs["pos"].copy_from(np.array([self.pos], dtype=np.int32))
            self.bufs["n"].copy_from(np.array([self.pos + 1], dtype=np.int32))
            for ln, dt in zip(self.step, self._timed(self.step)):
                times.setdefault((ln.op, ln.variant, ln.kernel.entry), []).append(dt)
            self.pos += 1
        return [{"op": op, "variant": v, "entry": e, "launches_per_step": len(ts) // steps,
                 "us_per_step": 1e6 * sum(ts) / steps} for (op, v, e), ts in times.items()]

    def _timed(self, launches) -> list[float]:
        if self.dev.kind == "gpu":
            cp = self.dev.cp
            ev = [cp.cuda.Event() for _ in range(len(launches) + 1)]
            ev[0].record()
            for ln, e in zip(launches, ev[1:]):
                ln.run()
                e.record()
            ev[-1].synchronize()
            return [cp.cuda.get_elapsed_time(a, b) / 1e3 for a, b in zip(ev, ev[1:])]
        out = []
        for ln in launches:
            t = time.perf_counter()
            ln.run()
            out.append(time.perf_counter() - t)
        return out


__all__ = ["Engine", "Generation", "Sampling", "encode"]
