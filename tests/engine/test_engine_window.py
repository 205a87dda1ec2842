"""Sliding-window Qwen3 configs (use_sliding_window, sliding_window, max_window_layers, layer_types),
which the engine refused: read as transformers' Qwen3Config decides which layers slide; where one does,
the engine serves no more positions than the window, within which a sliding layer attends to every
position, as a full one does. The emulated engine against transformers on such a model; transformers
itself differs past the window (so the limit is needed)."""
import json

import numpy as np
import pytest

from kreg import runtime
from kreg.engine import Engine
from kreg.engine import plan as P
from kreg.engine.config import load_config, parse_config
from kreg.engine.errors import EngineError
from kreg.engine.random_model import make_random_model, shape_config

TINY = dict(vocab_size=512, hidden_size=128, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1)


def hf(**over):
    return shape_config("tiny", **TINY).to_hf() | over


@pytest.mark.parametrize("over, window", [
    ({"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 0}, 8),
    ({"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 1}, 8),          # layer 1 slides
    ({"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 2}, None),       # none does
    ({"use_sliding_window": True, "sliding_window": None}, None),
    ({"use_sliding_window": False, "sliding_window": 8, "max_window_layers": 0}, None),
    ({"use_sliding_window": True, "sliding_window": 8, "layer_types": ["full_attention"] * 2}, None),
    ({"use_sliding_window": True, "layer_types": ["full_attention", "sliding_attention"]}, 4096),
])
def test_the_window_is_where_transformers_slides_a_layer(over, window):
    raw = hf(**over)
    if "sliding_window" not in over:
        raw.pop("sliding_window")                         # transformers' default 4096
    cfg = parse_config(raw)
    assert cfg.attention_window == window
    assert cfg.context == (min(window, cfg.max_position_embeddings) if window else cfg.max_position_embeddings)
    transformers = pytest.importorskip("transformers")
    types = transformers.Qwen3Config(**raw).layer_types
    assert ("sliding_attention" in types) == (window is not None)
    assert parse_config(cfg.to_hf()) == cfg                                    # written back as it was read


def test_the_engine_on_a_sliding_model_matches_transformers_within_the_window(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d = make_random_model(tmp_path, shape_config("tiny", **TINY), seed=2)
    raw = json.loads((d / "config.json").read_text())
    ids = [17, 412, 3, 455, 78, 99, 250, 31]

    def hf_logits(window):
        (d / "config.json").write_text(json.dumps(raw | {"use_sliding_window": True, "sliding_window": window,
                                                         "max_window_layers": 0}))
        m = transformers.Qwen3ForCausalLM.from_pretrained(d, dtype=torch.float64).eval()
        with torch.no_grad():
            return m(torch.tensor([ids])).logits[0].numpy()
    narrow, want = hf_logits(4), hf_logits(8)              # 8 tokens: a window of 8 sees every position
    assert np.max(np.abs(narrow[4:] - want[4:])) > 0.1 * np.max(np.abs(want))     # past the window: other logits
    assert load_config(d).context == 8
    eng = Engine(d, plan=P.explicit(runtime.device("cpu", max_cost=200_000_000), "bf16"), max_seq=64)
    assert eng.S == 8
    got = eng.prefill(ids, all_logits=True)
    assert np.max(np.abs(got - want)) <= 0.02 * np.max(np.abs(want))    # the engine's tolerance (test_engine_cpu)
    with pytest.raises(EngineError, match="longer than the KV cache \\(8 positions: the model's context"):
        eng.decode_step()                                  # a 9th position: past the window


def test_a_prompt_past_the_window_is_refused_naming_it(tmp_path):
    from kreg.engine import run
    cfg = parse_config(hf(use_sliding_window=True, sliding_window=16, max_window_layers=0))
    d = make_random_model(tmp_path, cfg)
    with pytest.raises(EngineError, match="longer than the model's context of 16 positions \\(sliding_window: the "
                                          "engine serves no position past a sliding layer's window"):
        run(d, "word " * 40, device="cpu")
