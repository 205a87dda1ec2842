"""Any vocabulary size: a vocabulary argmax's contract does not take (V % 8 != 0) runs, with argmax over
the logits padded with -inf past V (engine/launches.py argmax_width), on the CPU through the emulator:
the logits against the float64 reference, greedy tokens identical to the reference's, and argmax at the
edges of the padded row (the largest logit last, all -inf, all NaN)."""
import numpy as np
import pytest
from kreg.conformance.dtypes import encode
from kreg.engine import Engine, Sampling
from kreg.engine import launches as L
from kreg.engine import plan as P
from kreg.engine.errors import EngineError
from kreg.engine.random_model import make_random_model, shape_config
from kreg.engine.reference import Reference

from kreg import runtime

PROMPT = [17, 912, 3, 455, 78, 1000]


@pytest.fixture(scope="module")
def cpu_plan():
    return P.explicit(runtime.device("cpu", max_cost=200_000_000), "bf16")


@pytest.fixture(scope="module", params=[1001, 1003])
def odd_model(request, tmp_path_factory):
    cfg = shape_config("tiny", vocab_size=request.param, hidden_size=128, intermediate_size=192,
                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False)
    return make_random_model(tmp_path_factory.mktemp(f"v{request.param}"), cfg, seed=2)


def test_argmax_runs_over_the_vocabulary_padded_to_what_its_contract_takes(cpu_plan):
    assert L.argmax_width(cpu_plan, 1024) == 1024
    assert L.argmax_width(cpu_plan, 1001) == 1008
    assert L.argmax_width(cpu_plan, 151936) == 151936
    assert cpu_plan["argmax"].op.dims_ok({"B": 1, "V": 1001})      # the contract itself is unchanged


def test_an_odd_vocabulary_decodes_the_argmax_of_its_logits(odd_model, cpu_plan):
    """Every token is the exact argmax of the engine's logits over the real vocabulary, and the
    reference's logit there is its largest up to the logits' tolerance (a near tie may flip)."""
    eng = Engine(odd_model, plan=cpu_plan, max_seq=64)
    V = eng.cfg.vocab_size
    assert V % 8 and any(ln.op == "argmax" for ln in eng.step)
    got = eng.prefill(PROMPT, all_logits=True)
    want = Reference(odd_model).forward(PROMPT)
    assert got.shape == want.shape == (len(PROMPT), V)
    assert np.max(np.abs(got - want)) <= 0.02 * np.max(np.abs(want))
    seq, ref = list(PROMPT), Reference(odd_model)
    for _ in range(6):
        last, want = eng.logits(), ref.forward(seq)[-1]
        tok = eng.token()
        assert tok == int(np.argmax(last))
        assert want[tok] >= want.max() - 2 * 0.02 * np.max(np.abs(want))
        seq.append(tok)
        eng.decode_step()
    g = eng.generate(PROMPT, 6, Sampling(), eos=())
    assert g.tokens == seq[len(PROMPT):]                     # generate() from a fresh prefill: the same tokens


def _argmax_of(eng, values) -> int:
    eng.m.bufs["logits"].copy_from(encode(np.asarray(values, dtype=np.float64), "bf16"))
    for ln in eng.step:
        if ln.op == "argmax":
            ln.run()
    return eng.token()


def test_argmax_at_the_edges_of_the_padded_row(odd_model, cpu_plan):
    eng = Engine(odd_model, plan=cpu_plan, max_seq=64)
    V = eng.cfg.vocab_size
    x = np.linspace(-3, 3, V)[::-1].copy()
    x[V - 1] = 50.0
    assert _argmax_of(eng, x) == V - 1                       # the last real logit, next to the -inf tail
    x[V - 1], x[V - 2] = -np.inf, 60.0
    assert _argmax_of(eng, x) == V - 2
    assert _argmax_of(eng, np.full(V, -np.inf)) == 0         # a tie with the tail: the lowest index is real
    with pytest.raises(EngineError, match="outside the vocabulary .* every logit is NaN"):
        _argmax_of(eng, np.full(V, np.nan))
    # that index (V) is a row of the device's embedding table (zeros): the next step stays in bounds
    assert eng.m.w["embed"].nbytes == L.argmax_width(eng.plan, V) * eng.cfg.hidden_size * 2
    eng.pos = 0
    eng.decode_step()
