"""kreg.torch on CUDA tensors (needs a GPU, CuPy and a CUDA build of torch): the ops match their
float64 references within the ops' tolerances at Qwen3-4B shapes; they launch on torch's current
stream without a host synchronisation (torch's sync debug mode raises on one); they record into a CUDA
graph and replay it; a small block compiles with torch.compile(fullgraph=True) to the same bits; and a
transformers Qwen3 model swapped onto kreg ops (a tiny random one, and one with Qwen3-4B's widths and
heads and 4 layers) gives logits within tolerance of transformers in float64 and the same 32 greedy
tokens as plain transformers. The store records the safe bf16 variants as verified on this GPU (as
tests/engine/test_engine_cli.py records them); `kreg verify --device gpu` is what proves and tests them."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import kreg.torch as kt  # noqa: E402
from kreg import runtime  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402
from kreg.registry.store import Store  # noqa: E402

from helpers.torch_store import assert_matches_reference, record, safe_bf16  # noqa: E402

OPS = ("rms_norm", "add_rms_norm", "silu_mul", "gemv", "gemm", "embedding", "argmax", "attention_prefill",
       "attention_decode", "attention_merge")
BF = torch.bfloat16


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    h = tmp_path_factory.mktemp("kreg_torch_gpu")
    old = os.environ.get("KREG_HOME")
    os.environ["KREG_HOME"] = str(h)
    cat, store = load_catalog(), Store()
    kind = runtime.device("gpu").describe()
    for e in safe_bf16(cat, OPS).values():
        record(store, e, kind=kind)
    kt.use_profile("safe-only")
    yield cat
    if old is None:
        os.environ.pop("KREG_HOME")
    else:
        os.environ["KREG_HOME"] = old
    kt.use_profile("safe-only")


def rnd(*shape, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, generator=g, device="cuda").to(BF)


def test_ops_match_their_references_at_4b_shapes(home):
    cat = home
    x, w = rnd(7, 2560), rnd(2560, seed=1)
    assert_matches_reference(cat.ops["rms_norm"], {"DT": "bf16"}, {"T": 7, "H": 2560}, {"x": x, "w": w},
                             {"y": kt.rms_norm(x, w)}, {"eps": 1e-6})
    W, x1 = rnd(6144, 2560, seed=2), rnd(1, 2560, seed=3)
    assert_matches_reference(cat.ops["gemv"], {"DT": "bf16"}, {"N": 6144, "K": 2560}, {"W": W, "x": x1[0]},
                             {"y": kt.linear(x1, W)[0]})
    assert_matches_reference(cat.ops["gemm"], {"DT": "bf16"}, {"T": 7, "N": 6144, "K": 2560}, {"X": x, "W": W},
                             {"Y": kt.linear(x, W)})
    gu = rnd(7, 2 * 9728, seed=4)
    assert_matches_reference(cat.ops["silu_mul"], {"DT": "bf16"}, {"T": 7, "I": 9728}, {"gate_up": gu},
                             {"out": kt.silu_mul(gu)})
    T, Hq, Hkv, S = 5, 32, 8, 300
    q, kc, vc = rnd(T, Hq, 128, seed=5), rnd(S, Hkv, 128, seed=6), rnd(S, Hkv, 128, seed=7)
    assert_matches_reference(cat.ops["attention_prefill"], {"DT": "bf16"},
                             {"T": T, "Hq": Hq, "Hkv": Hkv, "S": S, "start": S - T},
                             {"q": q, "k_cache": kc, "v_cache": vc}, {"out": kt.attention_prefill(q, kc, vc, S - T)})
    n = torch.tensor([S - 3], dtype=torch.int32, device="cuda")
    o_part, lse = torch.ops.kreg.attention_decode(q[0], kc, vc, n, 4)
    assert_matches_reference(cat.ops["attention_decode"], {"DT": "bf16"}, {"Hq": Hq, "Hkv": Hkv, "S": S, "P": 4},
                             {"q": q[0], "k_cache": kc, "v_cache": vc, "n": n}, {"o_part": o_part, "lse_part": lse})
    logits = rnd(2, 151936, seed=8)
    assert torch.equal(kt.argmax(logits).long(), torch.argmax(logits.float(), dim=-1))
    ids = torch.tensor([5, 151935, 0], dtype=torch.int32, device="cuda")
    table = rnd(151936, 256, seed=9)
    assert torch.equal(kt.embedding(ids, table), table[ids.long()])


def test_launches_follow_the_current_stream_without_a_host_sync(home):
    x, w = rnd(64, 2560), rnd(2560, seed=1)
    want = kt.rms_norm(x, w)                        # first use: resolved and loaded (host work, outside)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    torch.cuda.set_sync_debug_mode("error")
    try:
        with torch.cuda.stream(s):
            torch.cuda._sleep(50_000_000)           # the stream is busy: a launch elsewhere would read early
            x2 = x * 1                               # produced on s
            y = kt.rms_norm(x2, w)                  # must run after it, on s
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.current_stream().wait_stream(s)
    assert torch.equal(y, want)


def test_ops_record_into_a_cuda_graph_and_replay(home):
    W, w = rnd(2560, 2560, seed=2), rnd(2560, seed=1)
    x = rnd(1, 2560, seed=3)

    def step(x):
        return kt.linear(kt.rms_norm(x, w), W)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step(x)                                      # warm-up: resolve and load outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = step(x)
    x.copy_(rnd(1, 2560, seed=4))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, step(x))


def test_a_block_compiles_with_fullgraph(home):
    def block(x, r, w, Wg, Wd):
        h = kt.add_rms_norm(x, r, w)
        return kt.linear(kt.silu_mul(kt.linear(h, Wg)), Wd)

    x, w = rnd(4, 2560), rnd(2560, seed=1)
    Wg, Wd = rnd(2 * 9728, 2560, seed=2), rnd(2560, 9728, seed=3)
    r1, r2 = rnd(4, 2560, seed=4), None
    r2 = r1.clone()
    want = block(x, r1, w, Wg, Wd)
    got = torch.compile(block, fullgraph=True)(x, r2, w, Wg, Wd)
    assert torch.equal(got, want) and torch.equal(r1, r2)


def _hf_case(home, tmp_path, cfg_kwargs, shape="tiny"):
    from transformers import AutoModelForCausalLM
    from kreg.engine.random_model import make_random_model, shape_config
    from kreg.torch import qwen3
    d = make_random_model(tmp_path / "m", shape_config(shape, **cfg_kwargs), seed=1)
    prompt = torch.tensor([[17, 912, 3, 455, 78, 1000, 5, 6]], device="cuda")
    with torch.no_grad():
        ref64 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, device_map="cuda")(prompt).logits[0]
        ref64 = ref64.cpu().numpy()
        plain = AutoModelForCausalLM.from_pretrained(d, dtype=BF, device_map="cuda")
        want = plain.generate(prompt, max_new_tokens=32, do_sample=False)[0, prompt.shape[1]:].tolist()
        del plain
        m = qwen3.swap(AutoModelForCausalLM.from_pretrained(d, dtype=BF, device_map="cuda"))
        got = m(prompt).logits[0].float().cpu().numpy()
        tokens = m.generate(prompt, max_new_tokens=32, do_sample=False)[0, prompt.shape[1]:].tolist()
    # the engine's bound (tests/engine/test_engine_cpu.py): bf16 logits after bf16 activations, 2% of max |logit|
    assert np.max(np.abs(got - ref64)) <= 0.02 * np.max(np.abs(ref64))
    assert tokens == want


def test_a_swapped_tiny_qwen3_matches_transformers_for_32_greedy_tokens(home, tmp_path):
    _hf_case(home, tmp_path, dict(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2))


def test_a_swapped_4b_shaped_qwen3_matches_transformers_for_32_greedy_tokens(home, tmp_path):
    _hf_case(home, tmp_path, dict(num_hidden_layers=4), shape="4b")
