"""An intermediate_size that is not a multiple of 8 (valid for transformers; the engine refused it):
the MLP runs at cfg.kernel_intermediate, the gate and up weights padded with zero rows and down with
zero columns, which add nothing. Loading pads exactly so; the float64 reference forward against
transformers' Qwen3ForCausalLM; the emulated engine, prefill and decode steps, against transformers."""
import numpy as np
import pytest

from kreg import runtime
from kreg.engine import Engine, Sampling
from kreg.engine import plan as P
from kreg.engine.config import load_config
from kreg.engine.random_model import make_random_model, random_tensors, shape_config
from kreg.engine.reference import Reference
from kreg.engine.weights import Checkpoint, load_layer

CFG = dict(vocab_size=512, hidden_size=128, intermediate_size=100, num_hidden_layers=1, num_attention_heads=2,
           num_key_value_heads=1, tie_word_embeddings=False)
IDS = [17, 412, 3, 455, 78, 99]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_random_model(tmp_path_factory.mktemp("i100"), shape_config("tiny", **CFG), seed=6)


def test_the_mlp_weights_are_padded_with_zeros(model):
    cfg = load_config(model)
    assert cfg.intermediate_size == 100 and cfg.kernel_intermediate == 104
    w = load_layer(Checkpoint(model), cfg, 0, "bf16")
    want = dict(random_tensors(cfg, seed=6))
    gate, up = w["gate_up"][:104], w["gate_up"][104:]
    assert w["gate_up"].shape == (208, 128) and w["down"].shape == (128, 104)
    assert np.array_equal(gate[:100], want["model.layers.0.mlp.gate_proj.weight"]) and not gate[100:].any()
    assert np.array_equal(up[:100], want["model.layers.0.mlp.up_proj.weight"]) and not up[100:].any()
    assert np.array_equal(w["down"][:, :100], want["model.layers.0.mlp.down_proj.weight"]) and not w["down"][:, 100:].any()


def test_engine_and_reference_match_transformers(model):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf = transformers.Qwen3ForCausalLM.from_pretrained(model, dtype=torch.float64).eval()
    with torch.no_grad():
        want = hf(torch.tensor([IDS])).logits[0].numpy()
        greedy = hf.generate(torch.tensor([IDS]), max_new_tokens=3, do_sample=False)[0, len(IDS):].tolist()
    top = np.max(np.abs(want))
    assert np.max(np.abs(Reference(model).forward(IDS) - want)) <= 1e-4 * top
    eng = Engine(model, plan=P.explicit(runtime.device("cpu", max_cost=200_000_000), "bf16"), max_seq=16)
    assert np.max(np.abs(eng.prefill(IDS, all_logits=True) - want)) <= 0.02 * top     # test_engine_cpu's tolerance
    assert eng.generate(IDS, 3, Sampling(), eos=()).tokens == greedy                  # the decode steps
