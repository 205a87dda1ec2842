"""kreg.torch on CPU tensors: every call runs the variant the safe-only profile resolves from the
results store, in kreg's PTX emulator (the same PTX the GPU runs), and its outputs are within the op's
own tolerance of the float64 reference. Contract violations are refused before any launch; an op with
no verified variant raises an error naming the op, why and the `kreg verify` to run; explain() and the
first-use log say which variant, PTX sha256, checker version and verdict served each op; the custom
ops trace under torch.compile(fullgraph=True). Shapes are tiny: the emulator is slow."""
import logging
import os
import re

import pytest

torch = pytest.importorskip("torch")

import kreg.torch as kt  # noqa: E402
from kreg.checker.prover.prove import CHECKER_VERSION  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402
from kreg.registry.store import Store  # noqa: E402
from kreg.torch import launch  # noqa: E402

from helpers.torch_store import assert_matches_reference, record, safe_bf16  # noqa: E402

OPS = ("rms_norm", "add_rms_norm", "silu_mul", "gemv", "gemm", "embedding", "argmax", "attention_prefill",
       "attention_decode", "attention_merge", "qk_norm_rope_kv", "qk_norm_rope_prefill")
BF = torch.bfloat16


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A KREG_HOME whose store has the safe bf16 variant of each op in OPS verified on the CPU."""
    h = tmp_path_factory.mktemp("kreg_torch_home")
    old = os.environ.get("KREG_HOME")
    os.environ["KREG_HOME"] = str(h)
    cat = load_catalog()
    store = Store()
    for e in safe_bf16(cat, OPS).values():
        record(store, e)
    kt.use_profile("safe-only")
    yield h, cat, store
    os.environ["KREG_HOME"] = old if old is not None else ""
    if old is None:
        os.environ.pop("KREG_HOME")
    kt.use_profile("safe-only")


def rnd(*shape, dtype=BF, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def test_rms_norm_runs_the_verified_ptx_and_matches_the_reference(home):
    _, cat, _ = home
    x, w = rnd(2, 3, 64), rnd(64, seed=1)
    y = kt.rms_norm(x, w, 1e-6)
    assert y.shape == x.shape and y.dtype == BF
    assert_matches_reference(cat.ops["rms_norm"], {"DT": "bf16"}, {"T": 6, "H": 64}, {"x": x.view(6, 64), "w": w},
                             {"y": y.view(6, 64)}, {"eps": 1e-6})
    ex = {r["op"]: r for r in kt.explain()}["rms_norm"]
    e = safe_bf16(cat, ["rms_norm"])["rms_norm"]
    assert ex["variant"] == e.name and ex["hash"] == e.hash and ex["verdict"] == "safe"
    assert ex["checker_version"] == CHECKER_VERSION and set(ex["proofs"].values()) == {"proven"}
    assert len(ex["ptx_sha256"]) == 64


def test_add_rms_norm_updates_the_residual_in_place(home):
    _, cat, _ = home
    x, r, w = rnd(3, 64), rnd(3, 64, seed=2), rnd(64, seed=3)
    r0 = r.clone()
    y = kt.add_rms_norm(x, r, w)
    assert not torch.equal(r, r0)
    assert_matches_reference(cat.ops["add_rms_norm"], {"DT": "bf16"}, {"T": 3, "H": 64},
                             {"x": x, "residual": r0, "w": w}, {"y": y, "residual": r}, {"eps": 1e-6})


def test_silu_mul_linear_embedding_argmax(home):
    _, cat, _ = home
    gu = rnd(2, 32)
    out = kt.silu_mul(gu)
    assert out.shape == (2, 16)
    assert_matches_reference(cat.ops["silu_mul"], {"DT": "bf16"}, {"T": 2, "I": 16}, {"gate_up": gu}, {"out": out})
    W, x1, x3 = rnd(24, 32, seed=4), rnd(1, 32, seed=5), rnd(3, 32, seed=6)
    y1 = kt.linear(x1, W)                                       # one row: gemv
    assert y1.shape == (1, 24)
    assert_matches_reference(cat.ops["gemv"], {"DT": "bf16"}, {"N": 24, "K": 32}, {"W": W, "x": x1[0]}, {"y": y1[0]})
    y3 = kt.linear(x3, W)                                       # rows: gemm
    assert_matches_reference(cat.ops["gemm"], {"DT": "bf16"}, {"T": 3, "N": 24, "K": 32}, {"X": x3, "W": W}, {"Y": y3})
    assert {r["op"] for r in kt.explain()} >= {"gemv", "gemm", "silu_mul"}
    table, ids = rnd(10, 16, seed=7), torch.tensor([3, 0, 9], dtype=torch.int32)
    assert torch.equal(kt.embedding(ids, table), table[ids.long()])
    logits = rnd(2, 40, seed=8)
    assert kt.argmax(logits).tolist() == torch.argmax(logits.float(), dim=-1).tolist()   # argmax: two kernels, scratch


def test_attention_prefill_and_decode_gqa(home):
    _, cat, _ = home
    T, Hq, Hkv, S, start = 2, 2, 1, 4, 1
    q, kc, vc = rnd(T, Hq, 128, seed=9), rnd(S, Hkv, 128, seed=10), rnd(S, Hkv, 128, seed=11)
    out = kt.attention_prefill(q, kc, vc, start)
    assert_matches_reference(cat.ops["attention_prefill"], {"DT": "bf16"},
                             {"T": T, "Hq": Hq, "Hkv": Hkv, "S": S, "start": start},
                             {"q": q, "k_cache": kc, "v_cache": vc}, {"out": out})
    n = torch.tensor([3], dtype=torch.int32)
    q1 = rnd(Hq, 128, seed=12)
    o_part, lse = torch.ops.kreg.attention_decode(q1, kc, vc, n, 2)
    assert_matches_reference(cat.ops["attention_decode"], {"DT": "bf16"}, {"Hq": Hq, "Hkv": Hkv, "S": S, "P": 2},
                             {"q": q1, "k_cache": kc, "v_cache": vc, "n": n}, {"o_part": o_part, "lse_part": lse})
    merged = kt.attention_decode(q1, kc, vc, n, splits=2)
    assert merged.dtype == BF and merged.shape == (Hq, 128)
    assert_matches_reference(cat.ops["attention_merge"], {"DT": "bf16"}, {"Hq": Hq, "P": 2},
                             {"o_part": o_part, "lse_part": lse}, {"out": merged})


def test_qk_norm_rope_writes_the_caches(home):
    _, cat, _ = home
    from kreg.conformance.references import rope_tables
    Hq, Hkv, S, T, start = 2, 1, 4, 2, 1
    cos, sin = (torch.from_numpy(t).float() for t in rope_tables(S))
    qn, kn = rnd(128, seed=13), rnd(128, seed=14)
    qkv = rnd(T, Hq + 2 * Hkv, 128, seed=15)
    kc, vc = torch.zeros(S, Hkv, 128, dtype=BF), torch.zeros(S, Hkv, 128, dtype=BF)
    k0, v0 = kc.clone(), vc.clone()
    q = kt.qk_norm_rope_prefill(qkv, qn, kn, cos, sin, kc, vc, start)
    assert_matches_reference(cat.ops["qk_norm_rope_prefill"], {"DT": "bf16"},
                             {"T": T, "Hq": Hq, "Hkv": Hkv, "S": S, "start": start},
                             {"qkv": qkv, "q_norm_w": qn, "k_norm_w": kn, "rope_cos": cos, "rope_sin": sin,
                              "k_cache": k0, "v_cache": v0}, {"q_out": q, "k_cache": kc, "v_cache": vc}, {"eps": 1e-6})
    pos = torch.tensor([3], dtype=torch.int32)
    k1, v1 = kc.clone(), vc.clone()
    q1 = kt.qk_norm_rope_kv(qkv[0], qn, kn, cos, sin, pos, kc, vc)
    assert q1.shape == (Hq, 128) and torch.equal(kc[:3], k1[:3]) and torch.equal(vc[:3], v1[:3])
    assert torch.equal(vc[3], qkv[0, Hq + Hkv:]) and not torch.equal(kc[3], k1[3])    # row pos[0] written


def test_contract_violations_are_refused_before_any_launch(home, monkeypatch):
    monkeypatch.setattr(launch, "run", lambda *a, **k: pytest.fail("launched despite a contract violation"))
    x, w = rnd(3, 64), rnd(64)
    cases = [
        (lambda: kt.rms_norm(x.float(), w), "x is torch.float32; the contract allows"),
        (lambda: kt.rms_norm(x, w.half()), "w is torch.float16 but another DT argument is torch.bfloat16"),
        (lambda: kt.rms_norm(rnd(3, 12), rnd(12)), "requirement H % 8 == 0 does not hold"),
        (lambda: kt.rms_norm(x, rnd(72)), "w has shape (72,), the contract says (64,)"),
        (lambda: torch.ops.kreg.rms_norm(rnd(64, 6).t(), w), "not contiguous"),
        (lambda: kt.add_rms_norm(x, x, w), "overlap in memory"),
        (lambda: kt.silu_mul(rnd(2, 31)), "no I in"),
        (lambda: kt.embedding(torch.tensor([0, 10], dtype=torch.int32), rnd(10, 16)), "holds 10, outside [0, 9]"),
        (lambda: kt.embedding(torch.tensor([0, 1]), rnd(10, 16)), "ids is torch.int64, the contract says torch.int32"),
        (lambda: kt.attention_prefill(rnd(2, 2, 128), rnd(4, 1, 128), rnd(4, 1, 128), 3), "start + T <= S"),
    ]
    for call, msg in cases:
        with pytest.raises(kt.ContractError, match=re.escape(msg)):
            call()


def test_no_verified_variant_is_an_error_naming_the_op_and_the_verify_to_run(home):
    x = rnd(2, 16)
    with pytest.raises(kt.NoVariantError) as ex:
        torch.ops.kreg.add(rnd(16), rnd(16, seed=1))            # `add` is not verified in this store
    msg = str(ex.value)
    assert "add" in msg and "no qualifying variant for add" in msg and "kreg verify --device cpu --op add" in msg
    assert "add_bf16_safe: no complete verify result" in msg
    with pytest.raises(kt.NoVariantError, match="kreg verify --device cpu --op rms_norm"):
        kt.rms_norm(x.half(), rnd(16).half())       # only the bf16 variant is verified


def test_an_unsafe_variant_never_serves_safe_only(home, tmp_path):
    _, cat, store = home
    unsafe = next(e for e in cat.entries if e.op == "add" and e.variant.safety == "unsafe"
                  and set(e.variant.types.values()) == {"bf16"})
    record(store, unsafe, verdict="unsafe", proofs="unknown")
    kt.use_profile("safe-only")
    with pytest.raises(kt.NoVariantError, match=f"{unsafe.name}: an unsafe variant"):
        torch.ops.kreg.add(rnd(16), rnd(16, seed=1))
    kt.use_profile("fastest")                       # the user's explicit choice: conformant, not proven
    try:
        a, b = rnd(16), rnd(16, seed=1)
        assert torch.equal(torch.ops.kreg.add(a, b), (a.float() + b.float()).to(BF))
        assert {r["op"]: r for r in kt.explain()}["add"]["verdict"] == "unsafe"
    finally:
        kt.use_profile("safe-only")


def test_first_use_logs_the_variant_and_its_ptx(home, caplog):
    _, cat, _ = home
    kt.use_profile("safe-only")
    with caplog.at_level(logging.INFO, logger="kreg.torch"):
        kt.silu_mul(rnd(1, 16))
        kt.silu_mul(rnd(1, 16))
    lines = [r.getMessage() for r in caplog.records if r.name == "kreg.torch"]
    e = safe_bf16(cat, ["silu_mul"])["silu_mul"]
    assert len(lines) == 1 and e.name in lines[0] and CHECKER_VERSION in lines[0] and "verdict safe" in lines[0]
    assert {r["op"]: r for r in kt.explain()}["silu_mul"]["ptx_sha256"] in lines[0]


def test_the_ops_trace_under_torch_compile_fullgraph(home):
    def block(x, w, W_up, W_down):
        h = kt.rms_norm(x, w)
        return kt.linear(kt.silu_mul(kt.linear(h, W_up)), W_down)

    x, w, Wu, Wd = rnd(2, 32), rnd(32, seed=1), rnd(32, 32, seed=2), rnd(32, 16, seed=3)
    want = block(x, w, Wu, Wd)
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")    # the fake impls, functionalisation
    assert torch.equal(compiled(x, w, Wu, Wd), want)
    r = rnd(2, 32, seed=4)
    r2 = r.clone()
    f = torch.compile(lambda x, r, w: kt.add_rms_norm(x, r, w), fullgraph=True, backend="aot_eager")
    assert torch.equal(f(x, r, w), kt.add_rms_norm(x, r2, w)) and torch.equal(r, r2)   # the mutation kept
