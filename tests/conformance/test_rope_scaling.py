"""transformers' linear, llama3 and dynamic RoPE scalings (conformance/rope.py Scaling), which the engine
refused though its tables are the host's: the float64 frequencies against transformers' own
(ROPE_INIT_FUNCTIONS) and against what each formula says; config.json's rope_scaling parsed, checked and
written back; the float64 reference forward against transformers' Qwen3ForCausalLM on a scaled model;
the engine on the CPU (emulator) against transformers on one."""
from dataclasses import replace

import numpy as np
import pytest

from kreg import runtime
from kreg.conformance.rope import Scaling, inv_freq
from kreg.engine import Engine
from kreg.engine import plan as P
from kreg.engine.config import parse_config
from kreg.engine.random_model import make_random_model, shape_config
from kreg.engine.reference import Reference

BLOCKS = {
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64},           # a short original context: every branch taken
}
TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1)


def raw_config(block, theta=1e6, max_positions=256):
    return shape_config("tiny", **TINY).to_hf() | {"rope_theta": theta, "rope_scaling": dict(block),
                                                   "max_position_embeddings": max_positions}


def test_the_frequencies_are_what_each_scaling_says():
    base = inv_freq(1e6)
    assert np.array_equal(inv_freq(1e6, scaling=Scaling("linear", 4.0)), base / 4)
    assert np.array_equal(inv_freq(1e6, scaling=Scaling("dynamic", 2.0)), base)   # within max_position_embeddings
    got = inv_freq(1e6, scaling=Scaling("llama3", 8.0, 1.0, 4.0, 64))
    wavelen = 2 * np.pi / base
    assert np.array_equal(got[wavelen < 16], base[wavelen < 16])                   # high frequencies kept
    assert np.array_equal(got[wavelen > 64], base[wavelen > 64] / 8)               # low ones / factor
    mid = (wavelen >= 16) & (wavelen <= 64)
    assert mid.any() and np.all((got[mid] <= base[mid]) & (got[mid] >= base[mid] / 8))


@pytest.mark.parametrize("name", list(BLOCKS))
def test_frequencies_match_transformers(name):
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    raw = raw_config(BLOCKS[name])
    want, att = ROPE_INIT_FUNCTIONS[name](transformers.Qwen3Config(**raw))
    cfg = parse_config(raw)
    assert cfg.scaling == Scaling(**BLOCKS[name]) and cfg.yarn is None and cfg.context == 256
    assert np.allclose(inv_freq(cfg.rope_theta, 128, scaling=cfg.scaling), want.double().numpy(), rtol=2e-6, atol=0)
    assert att == 1.0
    assert parse_config(cfg.to_hf()) == cfg                                         # written back as it was read


def test_llama3_without_an_original_context_takes_max_position_embeddings():
    block = {k: v for k, v in BLOCKS["llama3"].items() if k != "original_max_position_embeddings"}
    assert parse_config(raw_config(block)).scaling.original_max_position_embeddings == 256


@pytest.mark.parametrize("name", list(BLOCKS))
def test_reference_forward_matches_transformers(tmp_path, name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = parse_config(raw_config(BLOCKS[name], max_positions=128))
    d = make_random_model(tmp_path, cfg, seed=4)
    model = transformers.Qwen3ForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
    ids = [int(i) for i in np.random.default_rng(1).integers(0, 512, 100)]
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    got = Reference(d).forward(ids)
    # transformers computes the RoPE angles in float32: agreement to ~1e-4 of the largest logit
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))
    unscaled = Reference(make_random_model(tmp_path / "plain", replace(cfg, scaling=None), seed=4)).forward(ids)
    assert name == "dynamic" or np.max(np.abs(unscaled - want)) > 1e-2 * np.max(np.abs(want))   # the scaling matters


def test_engine_with_llama3_scaling_matches_transformers(tmp_path):
    """The emulated engine on a llama3-scaled model: its prefill logits (every position) within the
    engine's tolerance (tests/engine/test_engine_cpu.py: 2% of the largest logit) of transformers' in float64."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = parse_config(raw_config(BLOCKS["llama3"] | {"factor": 4.0}, max_positions=64)
                       | {"num_hidden_layers": 1, "hidden_size": 128, "intermediate_size": 128})
    d = make_random_model(tmp_path, cfg, seed=5)
    ids = [17, 412, 3, 455, 78, 99, 250, 31, 7, 402, 88, 160, 5, 321]      # unscaled tables: 8% off transformers
    model = transformers.Qwen3ForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    eng = Engine(d, plan=P.explicit(runtime.device("cpu", max_cost=200_000_000), "bf16"), max_seq=16)
    got = eng.prefill(ids, all_logits=True)
    assert np.max(np.abs(got - want)) <= 0.02 * np.max(np.abs(want))
