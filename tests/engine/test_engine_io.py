"""The engine's model I/O: config.json parsing and its refusals, safetensors loading (one file or
sharded with an index, tied embeddings with or without an lm_head copy), the tokenizer and the Qwen3
chat template, the random model maker's round trip, the on-demand random checkpoint (the folder's bits
without the folder), and the float64 reference forward (against Hugging
Face transformers where torch is installed)."""
import json

import numpy as np
import pytest

from kreg.engine.config import generation_defaults, load_config, parse_config
from kreg.engine.errors import EngineError
from kreg.engine import random_model
from kreg.engine.random_model import (RandomCheckpoint, make_random_model, random_tensors, shape_config,
                                       write_safetensors)
from kreg.engine.reference import Reference, causal_attention
from kreg.engine.tokenizer import StreamDecoder, Tokenizer, chat_prompt
from kreg.engine.weights import Checkpoint, load_globals, load_layer

TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1)


def hf(**over):
    return shape_config("tiny", **TINY).to_hf() | over


def test_config_reads_rope_theta_top_level_or_rope_parameters():
    assert parse_config(hf(rope_theta=5e5)).rope_theta == 5e5
    raw = hf()
    del raw["rope_theta"]
    raw["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e6}
    c = parse_config(raw)
    assert c.rope_theta == 1e6 and c.head_dim == 128 and c.q_heads * c.head_dim != c.hidden_size


@pytest.mark.parametrize("over, words", [
    ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "unsupported architecture"),
    ({"model_type": "qwen3_moe", "num_experts": 128}, "mixture-of-experts"),
    ({"layer_types": ["sliding_attention"] * 2}, "layer_types names sliding_attention layers but use_sliding"),
    ({"layer_types": ["full_attention"]}, "key 'layer_types': expected a list of 2"),
    ({"torch_dtype": "float8_e4m3fn"}, "dtype"),
    ({"head_dim": 64}, "head_dim 64"),
    ({"num_key_value_heads": 3}, "not a multiple"),
    ({"rope_scaling": {"rope_type": "longrope", "factor": 4.0}}, "RoPE scaling 'longrope'"),
    ({"hidden_size": None}, "hidden_size"),
])
def test_config_refuses_what_the_engine_cannot_run(over, words):
    with pytest.raises(EngineError, match=words):
        parse_config(hf(**over))


def test_missing_files_are_named(tmp_path):
    with pytest.raises(EngineError, match="no such model directory"):
        load_config(tmp_path / "nope")
    with pytest.raises(EngineError, match="config.json: missing"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(EngineError, match="cannot be read as JSON"):
        load_config(tmp_path)
    with pytest.raises(EngineError, match="no \\*.safetensors"):
        Checkpoint(tmp_path)
    with pytest.raises(EngineError, match="tokenizer.json: missing"):
        Tokenizer(tmp_path)


@pytest.mark.parametrize("tied, copy, shard", [(False, False, 1 << 30), (True, False, 1 << 30),
                                               (True, True, 40_000), (False, False, 40_000)])
def test_random_model_round_trip_sharded_and_tied(tmp_path, tied, copy, shard):
    cfg = shape_config("tiny", **TINY, tie_word_embeddings=tied)
    d = make_random_model(tmp_path, cfg, seed=3, shard_bytes=shard, lm_head_copy=copy)
    sharded = (d / "model.safetensors.index.json").exists()
    assert sharded == (shard < 1 << 20) and len(list(d.glob("*.safetensors"))) == (1 if not sharded else
                                                                                   len(list(d.glob("model-*"))))
    assert load_config(d) == cfg
    ck = Checkpoint(d)
    assert ("lm_head.weight" in ck) == (not tied or copy)
    g = load_globals(ck, cfg, "bf16")
    want = dict(random_tensors(cfg, seed=3))
    assert np.array_equal(g["embed"], want["model.embed_tokens.weight"])
    assert (g["lm_head"] is g["embed"]) == tied
    layer = load_layer(ck, cfg, 1, "bf16")
    D, H, I = 128, cfg.hidden_size, cfg.intermediate_size
    assert layer["qkv"].shape == ((2 + 2) * D, H) and layer["gate_up"].shape == (2 * I, H)
    assert np.array_equal(layer["qkv"][2 * D:3 * D], want["model.layers.1.self_attn.k_proj.weight"])
    assert np.array_equal(layer["gate_up"][I:], want["model.layers.1.mlp.up_proj.weight"])
    assert layer["qkv"].dtype == np.uint16
    # f16 from a bf16 checkpoint: converted on load
    assert load_layer(ck, cfg, 0, "f16")["down"].dtype == np.uint16
    assert generation_defaults(d)["eos_token_id"] == [151643, 151645]


@pytest.mark.parametrize("tied, copy, pool", [(False, False, None), (True, True, None), (True, False, 4096),
                                              (False, False, 4096)])
def test_random_checkpoint_gives_the_folders_bits(tmp_path, monkeypatch, tied, copy, pool):
    """Every tensor made on demand, in any order, is byte-identical to make_random_model's folder of the
    same seed; pool: a small POOL so that the tensors larger than it take the tiled path."""
    if pool:
        monkeypatch.setattr(random_model, "POOL", pool)
    cfg = shape_config("tiny", **TINY, tie_word_embeddings=tied)
    folder = Checkpoint(make_random_model(tmp_path, cfg, seed=5, lm_head_copy=copy))
    ck = RandomCheckpoint(cfg, seed=5, lm_head_copy=copy)
    assert sorted(ck.names()) == sorted(folder.where)
    for name in reversed(ck.names()):                        # another order than the folder was written in
        shape = folder.where[name].shape(name)
        assert np.array_equal(ck.get(name, "bf16", shape), folder.get(name, "bf16", shape)), name
        assert np.array_equal(ck.get(name, "f16", shape), folder.get(name, "f16", shape)), name
    other = RandomCheckpoint(cfg, seed=6).get("model.norm.weight", "bf16", (cfg.hidden_size,))
    assert not np.array_equal(other, folder.get("model.norm.weight", "bf16", (cfg.hidden_size,)))
    ck.check(cfg)
    for part in ("embed", "norm", "lm_head"):
        assert np.array_equal(load_globals(ck, cfg, "bf16")[part], load_globals(folder, cfg, "bf16")[part])


def test_random_checkpoint_refuses_bad_names_and_shapes_as_a_folder_does():
    cfg = shape_config("tiny", **TINY)
    ck = RandomCheckpoint(cfg)
    with pytest.raises(EngineError, match="weight model.layers.9.mlp.up_proj.weight is missing"):
        ck.get("model.layers.9.mlp.up_proj.weight", "bf16", (96, 64))
    with pytest.raises(EngineError, match=r"has shape \[96, 64\], the config implies \[64, 96\]"):
        ck.get("model.layers.0.mlp.up_proj.weight", "bf16", (64, 96))
    with pytest.raises(EngineError, match="weight model.layers.2.self_attn.q_proj.weight is missing"):
        ck.check(shape_config("tiny", **TINY | {"num_hidden_layers": 3}))
    with pytest.raises(EngineError, match=r"layers.0.mlp.gate_proj.weight has shape \[96, 64\], the config implies \[128, 64\]"):
        ck.check(shape_config("tiny", **TINY | {"intermediate_size": 128}))
    with pytest.raises(EngineError, match="lm_head.weight is missing and tie_word_embeddings is false"):
        ck.check(shape_config("tiny", **TINY, tie_word_embeddings=False))
    assert "lm_head.weight" not in ck and "model.norm.weight" in ck


def test_safetensors_files_are_read_by_the_safetensors_library(tmp_path):
    st = pytest.importorskip("safetensors", reason="the safetensors package cross-checks the format")
    bits = np.arange(12, dtype=np.uint16).reshape(3, 4)
    write_safetensors(tmp_path / "a.safetensors", [("w", "BF16", (3, 4), bits.tobytes())])
    (name, t), = st.deserialize((tmp_path / "a.safetensors").read_bytes())
    assert name == "w" and t["dtype"] in ("bfloat16", "BF16") and list(t["shape"]) == [3, 4]
    assert bytes(t["data"]) == bits.tobytes()


def test_checkpoint_errors_name_the_tensor(tmp_path):
    cfg = shape_config("tiny", **TINY)
    d = make_random_model(tmp_path, cfg)
    raw = json.loads((d / "config.json").read_text()) | {"intermediate_size": 104}
    with pytest.raises(EngineError, match="mlp.gate_proj.weight has shape"):
        load_layer(Checkpoint(d), parse_config(raw), 0, "bf16")
    write_safetensors(d / "model.safetensors", [("x", "I8", (1,), b"\0")])
    with pytest.raises(EngineError, match="embed_tokens.weight is missing"):
        load_globals(Checkpoint(d), cfg, "bf16")


def test_chat_template_text_and_tokens(tmp_path):
    d = make_random_model(tmp_path, shape_config("tiny", **TINY))
    assert chat_prompt("Hi", enable_thinking=False) == \
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert chat_prompt("Hi", system="Be brief.") == \
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    tok = Tokenizer(d)
    ids = tok.encode(chat_prompt("Hi"))
    assert ids[0] == 151644 and ids.count(151645) == 1 and tok.token_id("<|im_end|>") == 151645
    assert tok.decode(tok.encode("héllo wörld")) == "héllo wörld"
    s = StreamDecoder(tok)
    assert "".join(s.push(t) for t in tok.encode("naïve 日本語 text")) == "naïve 日本語 text"


def test_chat_template_matches_the_jinja_template(tmp_path):
    jinja2 = pytest.importorskip("jinja2", reason="jinja2 renders the tokenizer_config.json template")
    d = make_random_model(tmp_path, shape_config("tiny", **TINY))
    tmpl = jinja2.Environment().from_string(json.loads((d / "tokenizer_config.json").read_text())["chat_template"])
    for think in (True, False):
        for system in (None, "Be brief."):
            msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": "Hi"}]
            assert tmpl.render(messages=msgs, add_generation_prompt=True, enable_thinking=think) == \
                chat_prompt("Hi", system=system, enable_thinking=think)


def test_causal_attention_matches_a_direct_softmax():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4, 128)), rng.standard_normal((7, 2, 128)), rng.standard_normal((7, 2, 128))
    out = causal_attention(q, k, v, start=2)
    t, h = 2, 3                                       # query 2 sees positions 0..4 of kv head 1
    s = k[:5, 1] @ q[t, h] * float(np.float32(1 / np.sqrt(128)))      # the f32 scale a kernel receives
    p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    assert np.allclose(out[t, h], p @ v[:5, 1], rtol=1e-12, atol=1e-12)


def test_reference_forward_is_causal_and_deterministic(tmp_path):
    d = make_random_model(tmp_path, shape_config("tiny", **TINY))
    ref = Reference(d)
    a, b = ref.forward([5, 9, 17, 3]), ref.forward([5, 9, 17, 400])
    assert a.shape == (4, 512) and np.array_equal(a[:3], b[:3]) and not np.allclose(a[3], b[3])
    assert np.std(a) > 2                         # the logits spread (clear greedy margins)


def _with_other_lm_head(d, cfg, seed):
    """The tied model folder d rewritten with an lm_head.weight of other values than the embedding's."""
    out = []
    for name, bits in random_tensors(cfg, seed, lm_head_copy=True):
        if name == "lm_head.weight":
            bits = np.ascontiguousarray(bits[::-1])                   # the embedding's rows, reversed
        out.append((name, "BF16", bits.shape, bits.tobytes()))
    write_safetensors(d / "model.safetensors", out)
    return d


def test_a_tied_checkpoint_with_another_lm_head_keeps_it(tmp_path):
    """tie_word_embeddings true, but the checkpoint stores an lm_head of other values: transformers 5
    keeps both, untied (PreTrainedModel.tie_weights); so does the engine (it used the embedding: logits
    122% of the largest off). A stored copy of the same values is still the embedding itself."""
    cfg = shape_config("tiny", **TINY, tie_word_embeddings=True)
    d = _with_other_lm_head(make_random_model(tmp_path, cfg, seed=1), cfg, 1)
    g = load_globals(Checkpoint(d), cfg, "bf16")
    assert g["lm_head"] is not g["embed"] and np.array_equal(g["lm_head"], g["embed"][::-1])
    copy = load_globals(Checkpoint(make_random_model(tmp_path / "copy", cfg, seed=1, lm_head_copy=True)), cfg, "bf16")
    assert copy["lm_head"] is copy["embed"]


def _only_lm_head(d, cfg, seed):
    """The tied model folder d rewritten with the embedding stored as lm_head.weight alone."""
    out = [("lm_head.weight" if n == "model.embed_tokens.weight" else n, "BF16", b.shape, b.tobytes())
           for n, b in random_tensors(cfg, seed)]
    write_safetensors(d / "model.safetensors", out)
    return d


def test_a_tied_checkpoint_with_only_an_lm_head_reads_the_embedding_from_it(tmp_path):
    """Tied, the checkpoint stores lm_head.weight but no model.embed_tokens.weight: transformers ties the
    embedding to the lm_head (tie_weights); the engine did refuse ("embed_tokens.weight is missing")."""
    cfg = shape_config("tiny", **TINY, tie_word_embeddings=True)
    ck = Checkpoint(_only_lm_head(make_random_model(tmp_path, cfg, seed=2), cfg, 2))
    assert "model.embed_tokens.weight" not in ck
    ck.check(cfg)
    g = load_globals(ck, cfg, "bf16")
    assert g["lm_head"] is g["embed"] and np.array_equal(g["embed"], dict(random_tensors(cfg, 2))[
        "model.embed_tokens.weight"])
    with pytest.raises(EngineError, match="embed_tokens.weight is missing"):     # untied: no stand-in
        Checkpoint(tmp_path).check(shape_config("tiny", **TINY, tie_word_embeddings=False))


@pytest.mark.parametrize("tied, hkv, other_lm_head", [(True, 1, False), (False, 2, False), (True, 1, True),
                                                      (True, 1, "only")])
def test_reference_forward_matches_transformers(tmp_path, tied, hkv, other_lm_head):
    torch = pytest.importorskip("torch", reason="torch is not installed (CI need not install it; the H100 "
                                                "machine has it): the transformers comparison is skipped")
    transformers = pytest.importorskip("transformers")
    cfg = shape_config("tiny", **(TINY | {"num_key_value_heads": hkv, "tie_word_embeddings": tied}))
    d = make_random_model(tmp_path, cfg, seed=1)
    if other_lm_head:
        (_only_lm_head if other_lm_head == "only" else _with_other_lm_head)(d, cfg, 1)
    model = transformers.Qwen3ForCausalLM.from_pretrained(d, torch_dtype=torch.float32).double().eval()
    ids = [3, 14, 15, 92, 65, 35]
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    got = Reference(d).forward(ids)
    # transformers' RMSNorm computes in float32 even in a float64 model: agreement to ~1e-6 relative
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))
