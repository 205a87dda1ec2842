"""The engine: the model resident on the device (resident.py), a one-pass prefill, and the decode step
(launches.py) captured once as a graph and replayed. The token id stays on the device (argmax writes
the buffer the next step's embedding reads); the position and the attention length are device
scalars the host sets once after a prefill, and the step's last launch (decode_advance) moves on by
one, so a replay needs no host write. Every launch is a variant of the plan (plan.py). With pdl (the
default) each launch (decode step and prefill) whose kernel executes griddepcontrol.wait before any memory access
(checker/ptx/pdl.py) carries the programmatic-dependent-launch attribute: it may be scheduled while its
predecessor still runs, and its wait holds it until that predecessor completed and its writes are
visible, so the step's results are those of launches run one after another."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from kreg import runtime
from kreg.conformance.splits import choose_splits

from . import kernel_profile as KP
from . import launches as L
from . import plan as P
from .config import load_config
from .contracts import contract_problem
from .errors import EngineError
from .resident import Resident
from .sampling import Sampling, sample
from .weights import Checkpoint

CPU_MAX_COST = 200_000_000      # the emulator's step budget per launch (the engine's kernels are proven)


@dataclass
class Generation:
    prompt_tokens: int
    tokens: list[int] = field(default_factory=list)
    stopped: str = "length"             # "length" | "eos"
    prefill_s: float = 0.0              # the prompt to the first token
    decode_s: float = 0.0               # the first token to the last

    @property
    def decode_tok_s(self) -> float | None:
        n = len(self.tokens) - 1
        return n / self.decode_s if n > 0 and self.decode_s > 0 else None


class Engine:
    def __init__(self, model_dir=None, device: str = "gpu", profile: str = "safe-only", dtype: str | None = None,
                 max_seq: int | None = None, plan: P.Plan | None = None, pdl: bool = True, lock=None,
                 checkpoint=None):
        """model_dir: a Hugging Face model folder (config.json, safetensors); or, instead, checkpoint: an
        object that offers what weights.Checkpoint offers (`in`, check, get) and the model's `config`
        (e.g. random_model.RandomCheckpoint: random weights made on demand, no folder)."""
        if (model_dir is None) == (checkpoint is None):
            raise EngineError("give the engine a model folder or a checkpoint object, one of them")
        self.cfg = cfg = checkpoint.config if checkpoint is not None else load_config(model_dir)
        where = f"{model_dir}/config.json" if checkpoint is None else getattr(checkpoint, "where", "the checkpoint")
        self.dtype = dtype or cfg.dtype
        if self.dtype not in ("bf16", "f16"):
            raise EngineError(f"dtype {self.dtype!r} is not supported (bf16, f16)")
        try:
            self.dev = plan.device if plan else runtime.device(device, **({"max_cost": CPU_MAX_COST}
                                                                          if device == "cpu" else {}))
        except Exception as e:
            raise EngineError(f"cannot open --device {device}: {type(e).__name__}: {e}", exit_code=3) from None
        ck = checkpoint or Checkpoint(model_dir)    # file problems surface before any kernel is compiled
        ck.check(cfg)                               # every tensor's dtype and shape, before any is loaded
        self.plan = plan or (P.from_lock(lock, self.dev, self.dtype) if lock is not None
                             else P.from_profile(profile, self.dev, self.dtype))
        self.S = min(max_seq or 4096, cfg.context)
        self.P = self._splits()
        why = contract_problem(self.plan, cfg, self.dtype, self.S, self.P)   # before any weight is uploaded
        if why:
            raise EngineError(f"{where}: the model cannot run on the plan's kernels: {why}")
        self.m = Resident(self.dev, ck, cfg, self.dtype, self.S, vocab_rows=L.argmax_width(self.plan, cfg.vocab_size))
        self.pos, self.device_pos = 0, None       # the next position; what the device's pos holds
        # the most tokens one prefill pass takes: the smallest T range of the prefill ops
        self.prefill_chunk = min(int(self.plan[op].op.dims["T"][1])
                                 for op in ("gemm", "attention_prefill", "qk_norm_rope_prefill", "embedding"))
        self.pdl = pdl      # programmatic dependent launch for the kernels that wait first (plan.Launch.with_pdl)
        step = L.decode(self.plan, self.m, self.P)
        # argmax over a vocabulary it does not take runs over the logits padded with -inf (launches.argmax_width)
        self.m.fill_neg_inf("logits", cfg.vocab_size, L.argmax_width(self.plan, cfg.vocab_size))
        self.step = [ln.with_pdl() for ln in step] if pdl else step
        self.graph = None

    def _room(self) -> str:
        """The KV cache's size and what would raise it: --max-seq, or nothing past the model's context."""
        if self.S >= self.cfg.context:
            return f"{self.S} positions: the model's context, config.json's limit"
        return f"{self.S} positions; raise --max-seq (up to {self.cfg.context})"

    def _splits(self) -> int:
        """P, the attention_decode splits: on the GPU kreg.conformance.splits.choose_splits (one wave of
        decode blocks over the SMs, as the bench and the named cases use it); on the CPU 4 (so the tests
        see several splits, empty ones included while the context is short)."""
        if self.dev.kind != "gpu":
            return max(1, min(4, self.S))
        sms = self.dev.cp.cuda.Device().attributes["MultiProcessorCount"]
        return choose_splits(self.S, self.cfg.kv_heads, sms, self.cfg.q_heads)

    # ---- running ------------------------------------------------------------------------------
    def prefill(self, ids, all_logits: bool = False) -> np.ndarray | None:
        """Run the tokens ids at positions pos..pos+T-1 in one pass (KV cache rows written); the last
        position's logits go to the logits buffer and its argmax to the token id buffer. With
        all_logits, returns the logits of every position ([T, V] float64) as well."""
        T, start, V = len(ids), self.pos, self.cfg.vocab_size
        if T < 1:
            raise EngineError("an empty prompt: nothing to prefill")
        if start + T > self.S:
            raise EngineError(f"the context ({start + T} tokens) is longer than the KV cache ({self._room()})")
        if max(ids) >= V or min(ids) < 0:
            raise EngineError(f"token id {max(ids)} is outside the vocabulary ({V})")
        self.m.act("pf.ids", T, "i32").copy_from(np.asarray(ids, dtype=np.int32))
        for ln in L.prefill(self.plan, self.m, T, start, all_logits):
            (ln.with_pdl() if self.pdl else ln).run()
        self.pos = start + T
        return self.m.read(self.m.bufs["pf.logits"], T * V).reshape(T, V) if all_logits else None

    def _set_position(self) -> None:
        """Refuse a step past the KV cache; write pos and n to the device only where the device's do
        not already hold them (after a prefill: the step's decode_advance keeps them from then on)."""
        if self.pos >= self.S:
            raise EngineError(f"the context is longer than the KV cache ({self._room()})")
        if self.device_pos != self.pos:
            self.m.write_i32("pos", self.pos)
            self.m.write_i32("n", self.pos + 1)
        self.device_pos = self.pos + 1            # what the step's decode_advance leaves there

    def _restore_position(self) -> None:
        """Write pos and n back to the device (after launches that moved them on outside a real step)."""
        self.m.write_i32("pos", self.pos)
        self.m.write_i32("n", self.pos + 1)
        self.device_pos = self.pos

    def _capture_step(self) -> None:
        """Capture the decode step's graph once. A library routine may set itself up on its first call,
        which a capture must not see: the step's vendor launches run once first (they write only buffers
        the step itself rewrites)."""
        if self.graph is None:
            for ln in self.step:
                if self.plan[ln.op].entry.variant.vendor:
                    ln.run()
            self.dev.sync()
            self.graph = self.dev.capture(lambda s: [ln.run(s) for ln in self.step])

    def decode_step(self) -> None:
        """One token through the captured graph: the token in the ids buffer at position pos."""
        self._set_position()
        self._capture_step()
        self.graph.replay(self.dev.default_stream)
        self.pos += 1

    def logits(self) -> np.ndarray:
        """The last step's logits (float64 of the device's values)."""
        return self.m.read(self.m.bufs["logits"], self.cfg.vocab_size)

    def token(self) -> int:
        """The device's argmax of the last logits; an EngineError where it is past the vocabulary (only
        where every logit is NaN and argmax ran over logits padded with -inf: the embedding's zero rows
        past the vocabulary keep the device in bounds)."""
        t = int(self.m.read(self.m.bufs["ids"], 1, "i32")[0])
        if not 0 <= t < self.cfg.vocab_size:
            raise EngineError(f"argmax gave token {t}, outside the vocabulary ({self.cfg.vocab_size}): every logit "
                              "is NaN")
        return t

    def generate(self, prompt_ids, max_new_tokens: int = 32, sampling: Sampling = Sampling(), eos=(151645, 151643),
                 on_token=None, on_prefill=None) -> Generation:
        """Prefill the prompt, then decode up to max_new_tokens tokens (stopping after an EOS);
        on_token(token) is called as each arrives (streaming), on_prefill(done, total) after each prefill
        pass (progress on a long prompt)."""
        if len(prompt_ids) + max_new_tokens > self.S + 1:
            raise EngineError(f"the prompt ({len(prompt_ids)} tokens) plus --max-new-tokens {max_new_tokens} is "
                              f"longer than the KV cache ({self._room()})")
        rng = np.random.default_rng(sampling.seed)
        g = Generation(len(prompt_ids))
        self.pos = 0
        t0 = time.perf_counter()
        for lo in range(0, len(prompt_ids), self.prefill_chunk):
            self.prefill(prompt_ids[lo:lo + self.prefill_chunk])
            if on_prefill:
                on_prefill(min(lo + self.prefill_chunk, len(prompt_ids)), len(prompt_ids))
        for i in range(max_new_tokens):
            if i:
                self.decode_step()
            if sampling.greedy:
                tok = self.token()
            else:
                tok = sample(self.logits(), sampling, rng)
                self.m.write_i32("ids", tok)
            if i == 0:
                g.prefill_s, t0 = time.perf_counter() - t0, time.perf_counter()
            g.tokens.append(tok)
            if on_token:
                on_token(tok)
            if tok in eos:
                g.stopped = "eos"
                break
        g.decode_s = time.perf_counter() - t0
        return g

    def kernel_profile(self, replays: int = 20) -> list[dict]:
        """Per-kernel time of the decode step as its graph runs it (kernel_profile.py): per op, variant and
        entry, the launches per step and microseconds per step. Leaves the position where it was and the
        step's activations overwritten (the next generate() prefills anew)."""
        return KP.profile(self, replays)

    def step_seconds(self, replays: int = 20) -> float:
        """The decode step's measured time, its graph replayed back to back (the position restored after)."""
        return KP.step_seconds(self, replays)
