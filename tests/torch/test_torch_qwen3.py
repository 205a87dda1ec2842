"""kreg.torch.qwen3.swap on a Hugging Face transformers Qwen3 model, on the CPU (every kernel in the
emulator): a tiny random model (the engine's random-model writer: config.json + safetensors, loaded by
transformers itself) gives logits within the engine's tolerance of the same model run by transformers
in float64, and the same greedy tokens as plain transformers in bf16. The GPU runs of a tiny and a
4B-shaped model, 32 greedy steps, are in tests/torch/test_torch_gpu.py."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import kreg.torch as kt  # noqa: E402
from kreg.engine.random_model import make_random_model, shape_config  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402
from kreg.registry.store import Store  # noqa: E402

from helpers.torch_store import record, safe_bf16  # noqa: E402

OPS = ("rms_norm", "silu_mul", "gemv", "gemm", "attention_prefill", "embedding")
PROMPT = [17, 912, 3, 455, 78]


def tolerance(ref_logits: np.ndarray) -> float:
    """As tests/engine/test_engine_cpu.py argues for the engine: logits rounded to bf16, after activations rounded
    to bf16 between kernels through a layer of norms and projections: 2% of the largest |logit|."""
    return 0.02 * float(np.max(np.abs(ref_logits)))


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "home"))
    cat, store = load_catalog(), Store()
    for e in safe_bf16(cat, OPS).values():
        record(store, e)
    kt.use_profile("safe-only")
    yield tmp_path
    kt.use_profile("safe-only")


def test_a_swapped_tiny_qwen3_matches_transformers(home):
    from transformers import AutoModelForCausalLM
    from kreg.torch import qwen3
    d = make_random_model(home / "m", shape_config("tiny", vocab_size=1024, hidden_size=128, intermediate_size=128,
                                                   num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                                   tie_word_embeddings=False), seed=3)
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        ref64 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64)(ids).logits[0].numpy()
        plain = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16)
        want_tokens = plain.generate(ids, max_new_tokens=6, do_sample=False)[0, len(PROMPT):].tolist()
        m = qwen3.swap(AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16))
        assert not any(type(x).__name__ in ("Qwen3RMSNorm", "Qwen3MLP", "Linear", "Embedding") for x in m.modules())
        got = m(ids).logits[0].float().numpy()
        assert np.max(np.abs(got - ref64)) <= tolerance(ref64)
        assert m.generate(ids, max_new_tokens=6, do_sample=False)[0, len(PROMPT):].tolist() == want_tokens
    served = {r["op"]: r["variant"] for r in kt.explain()}
    assert set(served) == set(OPS)          # gemv: the decode steps; gemm: the prompt
