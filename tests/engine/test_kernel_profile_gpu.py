"""The per-kernel profile of the decode step tells the truth on the GPU (marked gpu): each kernel timed as
the step's graph runs it (engine/kernel_profile.py), the times summed over the step's kernels agree with
the measured step (its graph replayed) within 10%, for the safe plan and the fastest one, on layers of the
Qwen3-0.6B and 4B shapes with the real vocabulary (the lm_head streamed as in the real model)."""
import pytest
from kreg.engine import Engine, Sampling
from kreg.engine import plan as P
from kreg.engine.random_model import make_random_model, shape_config

from helpers.plans import fastest_plan

pytestmark = pytest.mark.gpu
SHAPES = {"0.6b-8layers": ("0.6b", dict(num_hidden_layers=8)),
          "4b-6layers": ("4b", dict(num_hidden_layers=6))}


@pytest.mark.parametrize("name", list(SHAPES))
def test_per_kernel_times_sum_to_the_measured_step(tmp_path_factory, name):
    from kreg import runtime
    preset, over = SHAPES[name]
    d = make_random_model(tmp_path_factory.mktemp(name), shape_config(preset, **over))
    dev = runtime.device("gpu")
    for label, plan in (("safe", P.explicit(dev, "bf16")), ("fastest", fastest_plan(dev))):
        eng = Engine(d, plan=plan, max_seq=1024)
        eng.generate(list(range(100, 228)), 32, Sampling(), eos=())
        prof = eng.kernel_profile()
        step = eng.step_seconds(replays=50)
        total = sum(k["us_per_step"] for k in prof) / 1e6
        assert sum(k["launches_per_step"] for k in prof) == len(eng.step)
        assert abs(total - step) <= 0.10 * step, (name, label, total * 1e6, step * 1e6,
                                                  sorted((round(k["us_per_step"], 1), k["op"]) for k in prof))
