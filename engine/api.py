"""The engine's Python API, the same behaviour as `kreg run`:

    from kreg.engine import run
    r = run("path/to/Qwen3-4B", "Why is the sky blue?", device="gpu", profile="safe-only", max_new_tokens=64)
    r["text"], r["variants"], r["decode_tok_s"]

run() loads the model, resolves the profile, generates, and returns the dict `kreg run --json` prints."""
from __future__ import annotations

from .config import generation_defaults, load_config
from .errors import EngineError
from .engine import Engine
from .sampling import Sampling
from .tokenizer import StreamDecoder, Tokenizer, chat_prompt


def sampling_from(model_dir, temperature=None, top_k=None, top_p=None, seed: int = 0) -> Sampling:
    """generation_config.json's defaults (do_sample, temperature, top_k, top_p), overridden by the
    arguments given; temperature 0 is greedy."""
    g = generation_defaults(model_dir)
    t = temperature if temperature is not None else (g["temperature"] if g["do_sample"] else 0.0)
    return Sampling(temperature=float(t), top_k=int(top_k if top_k is not None else g["top_k"] or 0),
                    top_p=float(top_p if top_p is not None else g["top_p"] or 1.0), seed=seed)


def run(model_dir, prompt: str, *, device: str = "cpu", profile: str = "safe-only", max_new_tokens: int = 32,
        chat: bool = True, enable_thinking: bool = True, system: str | None = None, temperature=None, top_k=None,
        top_p=None, seed: int = 0, max_seq: int | None = None, dtype: str | None = None,
        profile_kernels: bool = False, on_text=None, on_ready=None, on_prompt=None, on_prefill=None,
        engine: Engine | None = None, lock=None) -> dict:
    """Generate from a prompt; on_prompt(tokens, context) once the prompt is tokenized (before anything
    is loaded), on_ready(engine) once the engine is loaded, on_prefill(done, total) as the prompt is
    read, on_text(str) with the text as it completes (streaming). The request is checked against the
    model's context (max_position_embeddings, or YaRN's factor x its original context where more; at
    most a sliding layer's window) before the engine is built. lock: a registry.lockfile.Lock whose variants run instead of the profile's (and
    exactly those)."""
    cfg = load_config(model_dir)                        # the directory's problems first
    if not chat and not prompt:
        raise EngineError("an empty prompt with --raw: there is nothing to generate from (give a prompt, or "
                          "leave out --raw to use the chat template)")
    tok = Tokenizer(model_dir)
    sampling = sampling_from(model_dir, temperature, top_k, top_p, seed)
    eos = generation_defaults(model_dir)["eos_token_id"]
    text_in = chat_prompt(prompt, system, enable_thinking) if chat else prompt
    ids = tok.encode(text_in)
    if not ids:
        raise EngineError("the prompt encodes to no tokens: there is nothing to generate from")
    context = cfg.context
    where = ("sliding_window: the engine serves no position past a sliding layer's window"
             if cfg.attention_window and context == cfg.attention_window
             else "YaRN's factor x original_max_position_embeddings" if context > cfg.max_position_embeddings
             else "max_position_embeddings")
    if on_prompt:
        on_prompt(len(ids), context)
    if len(ids) >= context:
        raise EngineError(f"the prompt is {len(ids)} tokens, longer than the model's context of {context} "
                          f"positions ({where} in config.json): shorten it")
    need = len(ids) + max_new_tokens
    if need > context + 1:
        raise EngineError(f"--max-new-tokens {max_new_tokens} does not fit: after the {len(ids)}-token prompt the "
                          f"model's context of {context} positions ({where} in config.json) "
                          f"leaves room for at most {context + 1 - len(ids)} new tokens")
    if max_seq is not None and need > max_seq + 1:
        raise EngineError(f"the {len(ids)}-token prompt and --max-new-tokens {max_new_tokens} need "
                          f"{need - 1} KV cache positions, more than --max-seq {max_seq}: raise --max-seq (up to "
                          f"{context}) or ask for fewer tokens")
    eng = engine or Engine(model_dir, device=device, profile=profile, dtype=dtype, lock=lock,
                           max_seq=max_seq or min(context, max(256, 1 << (need - 1).bit_length())))
    if on_ready:
        on_ready(eng)
    stream = StreamDecoder(tok)
    g = eng.generate(ids, max_new_tokens, sampling, eos=eos, on_prefill=on_prefill,
                     on_token=(lambda t: on_text(stream.push(t))) if on_text else None)
    if on_text:
        on_text(stream.flush())
    out = {"model": str(model_dir), "device": eng.dev.describe(), "profile": eng.plan.profile, "dtype": eng.dtype,
           "variants": eng.plan.report(), "chat": chat, "prompt_tokens": len(ids), "tokens": g.tokens,
           "generated_tokens": len(g.tokens), "stopped": g.stopped, "text": tok.decode(g.tokens),
           "sampling": {"temperature": sampling.temperature, "top_k": sampling.top_k, "top_p": sampling.top_p,
                        "seed": sampling.seed}, "prefill_s": g.prefill_s, "decode_s": g.decode_s,
           "decode_tok_s": g.decode_tok_s, "max_seq": eng.S, "attention_splits": eng.P}
    if profile_kernels:           # each kernel timed as the step's graph runs it, and the step itself
        out["kernel_profile"] = eng.kernel_profile()
        try:
            out["step_us"] = 1e6 * eng.step_seconds()
        except EngineError:       # no room left in the KV cache for the timed steps
            out["step_us"] = None
    return out
