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
