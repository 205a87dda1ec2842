"""Host-side sampling: temperature, top-k and top-p (in Hugging Face's order), seeded; and the
generation_config.json defaults with overrides."""
import json

import numpy as np
import pytest

from kreg.engine.api import sampling_from
from kreg.engine.sampling import Sampling, probabilities, sample


def test_top_k_and_top_p_keep_exactly_the_expected_tokens():
    logits = np.log(np.array([0.05, 0.4, 0.1, 0.3, 0.15]))
    p = probabilities(logits, Sampling(temperature=1.0, top_k=2))
    assert set(np.flatnonzero(p)) == {1, 3} and np.isclose(p[1], 0.4 / 0.7)
    p = probabilities(logits, Sampling(temperature=1.0, top_p=0.75))       # 0.4 + 0.3 = 0.7 < 0.75: add 0.15
    assert set(np.flatnonzero(p)) == {1, 3, 4} and np.isclose(p.sum(), 1)
    p = probabilities(logits, Sampling(temperature=1.0, top_p=0.7))        # 0.4 + 0.3 reaches 0.7
    assert set(np.flatnonzero(p)) == {1, 3}
    cold = probabilities(logits, Sampling(temperature=0.1))
    assert cold[1] > 0.9 and np.isclose(cold.sum(), 1)


def test_sampling_is_seeded_and_follows_the_distribution():
    logits = np.log(np.array([0.1, 0.6, 0.3]))
    s = Sampling(temperature=1.0, seed=7)
    draw = lambda: [sample(logits, s, rng) for rng in [np.random.default_rng(s.seed)] for _ in range(4000)]  # noqa
    a, b = draw(), draw()
    assert a == b
    freq = np.bincount(a, minlength=3) / len(a)
    assert np.allclose(freq, [0.1, 0.6, 0.3], atol=0.03)


def test_nan_logits_are_never_drawn_and_bad_settings_are_refused():
    p = probabilities(np.array([np.nan, 1.0, 2.0]), Sampling(temperature=1.0))
    assert p[0] == 0 and np.isclose(p.sum(), 1)
    with pytest.raises(ValueError, match="top_p"):
        Sampling(temperature=1.0, top_p=0)


def test_generation_config_defaults_and_overrides(tmp_path):
    (tmp_path / "generation_config.json").write_text(json.dumps(
        {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "eos_token_id": [151645, 151643]}))
    s = sampling_from(tmp_path)
    assert (s.temperature, s.top_k, s.top_p, s.greedy) == (0.6, 20, 0.95, False)
    assert sampling_from(tmp_path, temperature=0).greedy
    (tmp_path / "generation_config.json").write_text(json.dumps({"do_sample": False}))
    assert sampling_from(tmp_path).greedy
