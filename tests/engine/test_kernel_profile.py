"""The decode step's per-kernel profile (engine/kernel_profile.py) on the CPU, through the emulator: every
launch of the step timed once in a graph of its own group, the position restored (the device's pos and n)
so decoding goes on as before, and the room it needs in the KV cache checked. Its GPU counterpart (the
per-kernel times sum to the measured step within 10%) is tests/engine/test_kernel_profile_gpu.py."""
import pytest
from kreg.engine import Engine, Sampling
from kreg.engine import kernel_profile as KP
from kreg.engine import plan as P
from kreg.engine.errors import EngineError
from kreg.engine.random_model import make_random_model, shape_config

from kreg import runtime

PROMPT = [17, 412, 3, 455]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    cfg = shape_config("tiny", vocab_size=512, hidden_size=128, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1)
    return make_random_model(tmp_path_factory.mktemp("tiny"), cfg)


@pytest.fixture(scope="module")
def plan():
    return P.explicit(runtime.device("cpu", max_cost=200_000_000), "bf16")


def test_every_launch_of_the_step_is_profiled_and_the_position_restored(tiny, plan):
    eng = Engine(tiny, plan=plan, max_seq=32)
    want = eng.generate(PROMPT, 4, Sampling(), eos=()).tokens
    pos = eng.pos
    prof = KP.profile(eng)
    assert [(k["op"], k["variant"], k["entry"]) for k in prof] == list(KP.groups(eng.step))
    assert sum(k["launches_per_step"] for k in prof) == len(eng.step)
    assert {k["op"] for k in prof} == set(P.decode_ops(eng.plan)) and all(k["us_per_step"] > 0 for k in prof)
    assert eng.pos == pos
    assert [int(eng.m.read(eng.m.bufs[b], 1, "i32")[0]) for b in ("pos", "n")] == [pos, pos + 1]
    step = eng.step_seconds()
    assert step > 0 and eng.pos == pos and int(eng.m.read(eng.m.bufs["pos"], 1, "i32")[0]) == pos
    assert eng.generate(PROMPT, 4, Sampling(), eos=()).tokens == want       # a fresh generation: the same


def test_profiling_keeps_the_position_inside_the_cache(tiny, plan):
    eng = Engine(tiny, plan=plan, max_seq=8)
    eng.generate(PROMPT, 3, Sampling(), eos=())          # pos 6 of 8: room for one more advance only
    with pytest.raises(EngineError, match="no room left in the KV cache to profile"):
        eng.kernel_profile()
    with pytest.raises(EngineError, match="no room left in the KV cache to time"):
        eng.step_seconds()
    eng = Engine(tiny, plan=plan, max_seq=8)
    eng.generate(PROMPT, 1, Sampling(), eos=())          # pos 4: decode_advance may take 3 steps
    eng.kernel_profile()
    assert int(eng.m.read(eng.m.bufs["pos"], 1, "i32")[0]) == eng.pos == 4


def test_step_bytes_cover_every_weight_and_the_attended_kv_rows(tiny, plan):
    """Each (op, variant) of the step gets the bytes it moves; the gemvs' sum holds every weight matrix once
    (the lm_head the tied embedding) and attention_decode reads the pos + 1 cached rows of each layer."""
    from kreg.engine.config import load_config
    cfg = load_config(tiny)
    eng = Engine(tiny, plan=plan, max_seq=32)
    eng.generate(PROMPT, 4, Sampling(), eos=())
    got = KP.step_bytes(eng)
    assert {op for op, _ in got} == set(P.decode_ops(eng.plan))
    assert {(op, v) for op, v, _ in KP.groups(eng.step)} == set(got)
    H, I, D = cfg.hidden_size, cfg.intermediate_size, 128
    weights = 2 * cfg.num_hidden_layers * (cfg.qkv_rows * H + H * cfg.q_heads * D + 3 * I * H) + 2 * cfg.vocab_size * H
    linear = sum(b for (op, _), b in got.items() if op.startswith(("gemv", "rms_norm_gemv")))
    assert weights < linear < weights * 1.05
    kv = sum(b for (op, _), b in got.items() if op == "attention_decode")
    assert kv >= cfg.num_hidden_layers * 2 * (eng.pos + 1) * cfg.kv_heads * D * 2
    assert kv < cfg.num_hidden_layers * 2 * eng.S * cfg.kv_heads * D * 2
