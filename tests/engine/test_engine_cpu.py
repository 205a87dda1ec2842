"""The engine end to end on the CPU, every kernel run by kreg's PTX emulator (the same PTX the GPU
runs): its logits against the float64 reference forward on tiny random Qwen3 models of several
configs (tied and untied, GQA groups 1, 2 and 4, heads * head_dim != hidden), prefill (every position)
and decode steps; greedy tokens identical to the reference's for 32 steps; sampling seeded.

The plan here names the registry's safe variants without consulting the results store (plan.explicit):
these tests are about the engine's numerics; the store-driven profile is tested through `kreg run`
(tests/engine/test_engine_cli.py)."""
import numpy as np
import pytest

from kreg import runtime
from kreg.engine import Engine, Sampling
from kreg.engine import plan as P
from kreg.engine.config import load_config
from kreg.engine.errors import EngineError
from kreg.engine.random_model import RandomCheckpoint, make_random_model, shape_config
from kreg.engine.reference import Reference

# name: (hidden, intermediate, layers, q heads, kv heads, tied)
CONFIGS = {
    "tied-gqa2-h256": (256, 256, 2, 4, 2, True),       # 4 * 128 = 512 != 256
    "untied-gqa1-h128": (128, 192, 1, 2, 2, False),
    "untied-gqa4-h512": (512, 128, 1, 4, 1, False),    # heads * head_dim == hidden
}
VOCAB = 1024
PROMPT = [17, 912, 3, 455, 78, 1000]


def model(tmp_path_factory, name, seed=0):
    H, I, L, hq, hkv, tied = CONFIGS[name]
    cfg = shape_config("tiny", vocab_size=VOCAB, hidden_size=H, intermediate_size=I, num_hidden_layers=L,
                       num_attention_heads=hq, num_key_value_heads=hkv, tie_word_embeddings=tied)
    return make_random_model(tmp_path_factory.mktemp(name), cfg, seed=seed)


@pytest.fixture(scope="module")
def cpu_plan():
    dev = runtime.device("cpu", max_cost=200_000_000)
    return P.explicit(dev, "bf16")


def tolerance(ref_logits):
    """The logits are rounded to bf16 (half an ulp: 2^-9 of the largest, 0.2%), after every activation
    was rounded to bf16 between kernels through 1-2 layers of norms and projections: 2% of the largest
    |logit| (measured: about 0.5%)."""
    return 0.02 * np.max(np.abs(ref_logits))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_engine_logits_match_the_float64_reference(tmp_path_factory, cpu_plan, name):
    d = model(tmp_path_factory, name)
    ref = Reference(d)
    eng = Engine(d, plan=cpu_plan, max_seq=64)
    got = eng.prefill(PROMPT, all_logits=True)                       # every prompt position
    want = ref.forward(PROMPT)
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) <= tolerance(want), name
    assert np.array_equal(eng.logits(), got[-1])                     # the decode path's last-position logits
    seq, last = list(PROMPT), got[-1]
    for _ in range(3):                                               # decode steps through the graph
        tok = eng.token()                                            # the device's argmax of its logits
        assert tok == int(np.argmax(last))
        seq.append(tok)
        eng.decode_step()
        last, want = eng.logits(), ref.forward(seq)[-1]
        assert np.max(np.abs(last - want)) <= tolerance(want), (name, len(seq))


def test_greedy_tokens_match_the_reference_for_32_steps(tmp_path_factory, cpu_plan):
    d = model(tmp_path_factory, "tied-gqa2-h256", seed=1)
    eng = Engine(d, plan=cpu_plan, max_seq=64)
    g = eng.generate(PROMPT, 32, Sampling(), eos=())
    assert len(g.tokens) == 32 and g.stopped == "length"
    assert g.tokens == Reference(d).greedy(PROMPT, 32)


def test_a_one_token_prompt_decodes_through_empty_attention_splits(tmp_path_factory, cpu_plan):
    d = model(tmp_path_factory, "untied-gqa4-h512")
    eng = Engine(d, plan=cpu_plan, max_seq=64)
    assert eng.P == 4                                  # positions 1 and 2 leave splits empty
    g = eng.generate([5], 4, Sampling(), eos=())
    assert g.tokens == Reference(d).greedy([5], 4)


def test_a_prompt_prefilled_in_chunks_continues_the_same(tmp_path_factory, cpu_plan):
    d = model(tmp_path_factory, "untied-gqa1-h128")
    eng = Engine(d, plan=cpu_plan, max_seq=64)
    assert eng.prefill_chunk == 8192                   # gemm's T range
    eng.prefill_chunk = 4                              # 6 prompt tokens: passes at start 0 and 4
    assert eng.generate(PROMPT, 3, Sampling(), eos=()).tokens == Reference(d).greedy(PROMPT, 3)


def test_sampling_is_seeded_and_eos_stops(tmp_path_factory, cpu_plan):
    d = model(tmp_path_factory, "untied-gqa1-h128")
    eng = Engine(d, plan=cpu_plan, max_seq=64)
    s = Sampling(temperature=1.0, top_k=50, seed=3)
    a, b = eng.generate(PROMPT, 4, s, eos=()).tokens, eng.generate(PROMPT, 4, s, eos=()).tokens
    assert a == b and len(a) == 4
    c = eng.generate(PROMPT, 4, Sampling(temperature=1.0, top_k=50, seed=4), eos=()).tokens
    assert c != a
    g = eng.generate(PROMPT, 4, s, eos=(a[1],))
    assert g.tokens == a[:2] and g.stopped == "eos"


def test_context_longer_than_the_cache_is_refused(tmp_path_factory, cpu_plan):
    from kreg.engine.errors import EngineError
    d = model(tmp_path_factory, "untied-gqa1-h128")
    eng = Engine(d, plan=cpu_plan, max_seq=8)
    with pytest.raises(EngineError, match="longer than the KV cache"):
        eng.generate(PROMPT, 4)


def test_the_fused_down_projection_matches_the_reference(tmp_path_factory):
    """gemv_swiglu (not in a plan by default: plan.FUSIONS) in place of silu_mul + gemv in the decode
    step: the decode logits against the float64 reference."""
    d = model(tmp_path_factory, "tied-gqa2-h256")
    dev = runtime.device("cpu", max_cost=200_000_000)
    plan = P.explicit(dev, "bf16", optional=P.FUSIONS)
    eng = Engine(d, plan=plan, max_seq=64)
    assert "gemv_swiglu" in {ln.op for ln in eng.step} and "silu_mul" not in {ln.op for ln in eng.step}
    eng.prefill(PROMPT)
    seq = list(PROMPT)
    for _ in range(2):
        seq.append(eng.token())
        eng.decode_step()
        want = Reference(d).forward(seq)[-1]
        assert np.max(np.abs(eng.logits() - want)) <= tolerance(want)


def test_the_fused_decode_step_matches_the_unfused_one(tmp_path_factory):
    """The fused decode step (plan.FUSED_DECODE, taken by default where all three resolve): 7 launches a
    layer instead of 10; its logits within the tolerance of the unfused step's and of
    the float64 reference's, the same greedy tokens."""
    name = "tied-gqa2-h256"
    d = model(tmp_path_factory, name)
    L = CONFIGS[name][2]
    dev = runtime.device("cpu", max_cost=200_000_000)
    fused = Engine(d, plan=P.explicit(dev, "bf16"), max_seq=64)
    plain = Engine(d, plan=P.explicit(dev, "bf16", optional=()), max_seq=64)
    assert P.fused_decode(fused.plan) and not P.fused_decode(plain.plan)
    ops = [ln.op for ln in fused.step]
    # embedding, 7 a layer, rms_norm + gemv lm_head, argmax, decode_advance (each one launch here but argmax)
    tail = 4 + ops.count("argmax")
    assert len(fused.step) == 7 * L + tail and len(plain.step) == 10 * L + tail, (ops, [ln.op for ln in plain.step])
    assert not {"add_rms_norm", "silu_mul"} & set(ops) and ops.count("rms_norm") == ops.count("gemv") == 1
    assert ops.count("gemv_residual") == 2 * L and ops.count("rms_norm_gemv") == L
    assert set(ops) == set(P.decode_ops(fused.plan))
    seq = list(PROMPT)
    fused.prefill(PROMPT)
    plain.prefill(PROMPT)
    for _ in range(3):
        assert fused.token() == plain.token()
        seq.append(fused.token())
        fused.decode_step()
        plain.decode_step()
        want = Reference(d).forward(seq)[-1]
        got, base = fused.logits(), plain.logits()
        assert np.max(np.abs(got - base)) <= tolerance(want)
        assert np.max(np.abs(got - want)) <= tolerance(want)


def test_engine_from_a_random_checkpoint_runs_as_from_its_folder(tmp_path_factory, cpu_plan):
    """Engine(checkpoint=RandomCheckpoint(cfg)) (no folder) computes the folder's logits bit for bit."""
    d = model(tmp_path_factory, "untied-gqa1-h128", seed=2)
    ck = RandomCheckpoint(load_config(d), seed=2)
    want = Engine(d, plan=cpu_plan, max_seq=16).prefill(PROMPT, all_logits=True)
    got = Engine(checkpoint=ck, plan=cpu_plan, max_seq=16).prefill(PROMPT, all_logits=True)
    assert np.array_equal(got, want)
    with pytest.raises(EngineError, match="a model folder or a checkpoint object"):
        Engine(d, checkpoint=ck, plan=cpu_plan)
