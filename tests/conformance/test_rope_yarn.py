"""YaRN RoPE scaling (the Qwen3 model cards' long-context recipe): the float64 frequencies and attention
factor against transformers' own (_compute_yarn_parameters, when transformers is installed) and against a
direct float64 transcription of its formula; config.json's rope_scaling / rope_parameters parsed and
checked; the float64 reference forward against transformers' Qwen3ForCausalLM on a YaRN model; the
engine on the CPU (emulator) against the reference, with the scaled tables."""
import json
import math

import numpy as np
import pytest
from kreg.conformance.rope import Yarn, inv_freq, rope_tables, yarn_attention_factor
from kreg.engine.config import parse_config
from kreg.engine.errors import EngineError
from kreg.engine.random_model import make_random_model, shape_config
from kreg.engine.reference import Reference

CARD = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}   # the Qwen3 model cards
CASES = [
    (1e6, CARD),
    (1e6, {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4096}),
    (1e4, {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048, "beta_fast": 16,
           "beta_slow": 2, "truncate": False}),
    (5e5, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192, "mscale": 0.707,
           "mscale_all_dim": 1.0}),
    (1e6, {"rope_type": "yarn", "factor": 3.0, "original_max_position_embeddings": 32768,
           "attention_factor": 1.5}),
]


def _yarn(block: dict) -> Yarn:
    return Yarn(**{k: v for k, v in block.items() if k != "rope_type"})


def _transcribed(theta, block, dim=128):
    """transformers' formula, written out again in float64 (a second reading of modeling_rope_utils)."""
    f, orig = block["factor"], block["original_max_position_embeddings"]
    bf, bs = block.get("beta_fast") or 32, block.get("beta_slow") or 1
    cd = lambda r: dim * math.log(orig / (r * 2 * math.pi)) / (2 * math.log(theta))
    lo, hi = cd(bf), cd(bs)
    if block.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    out = []
    for i in range(dim // 2):
        base = theta ** (2 * i / dim)
        ramp = min(max((i - lo) / ((hi + 0.001 if hi == lo else hi) - lo), 0.0), 1.0)
        out.append(ramp / (f * base) + (1 - ramp) / base)
    m = lambda s, ms=1.0: 1.0 if s <= 1 else 0.1 * ms * math.log(s) + 1.0
    if block.get("attention_factor") is not None:
        att = block["attention_factor"]
    elif block.get("mscale") and block.get("mscale_all_dim"):
        att = m(f, block["mscale"]) / m(f, block["mscale_all_dim"])
    else:
        att = m(f)
    return np.array(out), att


@pytest.mark.parametrize("theta, block", CASES)
def test_yarn_frequencies_match_a_transcription_of_transformers(theta, block):
    want, att = _transcribed(theta, block)
    y = _yarn(block)
    assert np.allclose(inv_freq(theta, 128, y), want, rtol=1e-13, atol=0)
    assert yarn_attention_factor(y) == pytest.approx(att, rel=1e-15)
    cos, sin = rope_tables(300, theta, yarn=y)
    ang = np.arange(300)[:, None] * want[None, :]
    assert np.allclose(cos, att * np.cos(ang), atol=1e-12) and np.allclose(sin, att * np.sin(ang), atol=1e-12)


def test_the_model_cards_recipe_scales_low_frequencies_and_the_attention():
    y = _yarn(CARD)
    base, scaled = inv_freq(1e6), inv_freq(1e6, yarn=y)
    assert scaled[0] == base[0]                                   # the fastest rotation kept (1 = theta^0)
    assert scaled[-1] == pytest.approx(base[-1] / 4, rel=1e-12)   # the slowest interpolated by the factor
    assert np.all(scaled <= base * (1 + 1e-15)) and np.any((scaled < base) & (scaled > base / 4))   # a ramp between
    assert yarn_attention_factor(y) == pytest.approx(0.1 * math.log(4) + 1)
    assert y.context == 131072


@pytest.mark.parametrize("theta, block", CASES)
def test_yarn_frequencies_match_transformers(theta, block):
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    raw = shape_config("tiny").to_hf() | {"rope_theta": theta, "rope_scaling": dict(block),
                                           "max_position_embeddings": 40960}
    hf = transformers.Qwen3Config(**raw)
    want, att = ROPE_INIT_FUNCTIONS["yarn"](hf)
    cfg = parse_config(raw)
    assert cfg.yarn == _yarn(block) and cfg.rope_theta == theta
    assert np.allclose(inv_freq(theta, 128, cfg.yarn), want.double().numpy(), rtol=2e-6, atol=0)   # f32 there
    assert yarn_attention_factor(cfg.yarn) == pytest.approx(att, rel=1e-7)


def test_config_reads_yarn_from_rope_scaling_or_rope_parameters():
    base = shape_config("tiny").to_hf()
    a = parse_config(base | {"rope_scaling": CARD, "max_position_embeddings": 40960})
    b = parse_config(base | {"rope_parameters": CARD | {"rope_theta": 1e6}, "max_position_embeddings": 40960})
    assert a.yarn == b.yarn == Yarn(4.0, 32768) and a.context == b.context == 131072
    assert parse_config(base).yarn is None and parse_config(base).context == base["max_position_embeddings"]
    assert parse_config(json.loads(json.dumps(a.to_hf()))) == a                 # written back as it was read


def test_yarn_without_an_original_context_takes_max_position_embeddings():
    """As transformers' standardize_rope_params: original_max_position_embeddings left out is the model's
    max_position_embeddings (so the context is factor x that)."""
    raw = shape_config("tiny").to_hf() | {"rope_scaling": {"rope_type": "yarn", "factor": 4.0},
                                           "max_position_embeddings": 2048}
    cfg = parse_config(raw)
    assert cfg.yarn == Yarn(4.0, 2048) and cfg.context == 8192
    transformers = pytest.importorskip("transformers")
    assert transformers.Qwen3Config(**raw).rope_parameters["original_max_position_embeddings"] == 2048


def test_rope_theta_inside_rope_scaling_is_read():
    """transformers reads rope_theta from the RoPE mapping first (then the top level, then 10000): a
    rope_scaling block that carries it and no top-level rope_theta is theta 1e6, not 10000."""
    raw = shape_config("tiny").to_hf() | {"rope_scaling": CARD | {"rope_theta": 1e6}}
    del raw["rope_theta"]
    cfg = parse_config(raw)
    assert cfg.rope_theta == 1e6 and cfg.yarn == Yarn(4.0, 32768)
    assert parse_config(raw | {"rope_theta": 5e5}).rope_theta == 1e6        # the mapping's, over the top level
    transformers = pytest.importorskip("transformers")
    assert transformers.Qwen3Config(**raw).rope_parameters["rope_theta"] == 1e6


def test_rope_scaling_and_rope_parameters_that_disagree_are_refused():
    """transformers takes rope_scaling alone where both are given (rope_parameters' theta dropped):
    where the two imply different RoPE the engine refuses rather than follow either silently."""
    raw = shape_config("tiny").to_hf() | {"rope_scaling": CARD, "rope_parameters": {"rope_type": "default",
                                                                                    "rope_theta": 1e6}}
    del raw["rope_theta"]
    with pytest.raises(EngineError, match="rope_scaling .* and rope_parameters .* give different RoPE"):
        parse_config(raw)
    same = raw | {"rope_parameters": CARD | {"rope_theta": 1e6}, "rope_theta": 1e6}
    assert parse_config(same).yarn == Yarn(4.0, 32768) and parse_config(same).rope_theta == 1e6


@pytest.mark.parametrize("block, why", [
    ({"rope_type": "longrope", "factor": 4.0}, "RoPE scaling 'longrope' is not supported"),
    ({"rope_type": "yarn", "original_max_position_embeddings": 32768}, "key 'factor': YaRN needs a number >= 1"),
    (CARD | {"factor": 0.5}, "YaRN needs a number >= 1"),
    (CARD | {"partial_rotary_factor": 0.5}, "YaRN does not take 'partial_rotary_factor'"),
    (CARD | {"beta_fast": 1, "beta_slow": 4}, "beta_fast 1.0 is below beta_slow 4.0"),
    (CARD | {"truncate": "yes"}, "key 'truncate': expected true or false"),
])
def test_config_refuses_what_yarn_does_not_take(block, why):
    with pytest.raises(EngineError, match=why):
        parse_config(shape_config("tiny").to_hf() | {"rope_scaling": block})


TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1)


def test_reference_forward_with_yarn_matches_transformers(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    y = Yarn(factor=4.0, original_max_position_embeddings=64)     # a short original context: the ramp matters
    d = make_random_model(tmp_path, shape_config("tiny", **TINY, yarn=y, max_position_embeddings=256), seed=3)
    model = transformers.Qwen3ForCausalLM.from_pretrained(d, torch_dtype=torch.float32).double().eval()
    ids = list(np.random.default_rng(0).integers(0, 512, 200))
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    ref = Reference(d)
    got = ref.forward(ids)
    tol = 1e-4 * np.max(np.abs(want))
    assert np.max(np.abs(got - want)) <= tol
    ref.cfg = shape_config("tiny", **TINY, max_position_embeddings=256)   # without YaRN: far off (the test can fail)
    assert np.max(np.abs(ref.forward(ids) - want)) > 100 * tol


def test_the_engine_runs_yarn_tables_on_the_cpu(tmp_path):
    from kreg.engine import Engine
    from kreg.engine import plan as P

    from kreg import runtime
    y = Yarn(factor=4.0, original_max_position_embeddings=16)
    d = make_random_model(tmp_path, shape_config("tiny", **(TINY | {"hidden_size": 128, "num_hidden_layers": 1}),
                                                 yarn=y, max_position_embeddings=32), seed=4)
    eng = Engine(d, plan=P.explicit(runtime.device("cpu", max_cost=200_000_000), "bf16"), max_seq=128)
    assert eng.S == 64                                                   # YaRN's context: 4 x 16
    cos = eng.m.rope["rope_cos"].copy_to().view(np.float32).reshape(64, 64)
    assert np.array_equal(cos, rope_tables(64, 1e6, yarn=y)[0].astype(np.float32))     # the scaled tables
    prompt = [17, 300, 3, 455, 78, 100, 9, 200, 31, 4]
    got = eng.prefill(prompt, all_logits=True)
    want = Reference(d).forward(prompt)
    assert np.max(np.abs(got - want)) <= 0.02 * np.max(np.abs(want))
    seq = prompt + [eng.token()]
    eng.decode_step()
    want = Reference(d).forward(seq)[-1]
    assert np.max(np.abs(eng.logits() - want)) <= 0.02 * np.max(np.abs(want))
