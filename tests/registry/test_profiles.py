"""Profiles resolved from a results store made by hand: safe-only takes only safe variants proven for
all dims by the current checker for the exact PTX with numerics passing on this device kind, and says
why each other candidate was not taken; fastest takes the fastest conformant one."""
import pytest

from kreg.registry.catalog import load_catalog
from kreg.registry.profiles import resolve, uneven_timing
from kreg.registry.results import PROPS
from kreg.registry.store import Store

from helpers.store_records import GPU, verified


@pytest.fixture
def add(tmp_path):
    cat = load_catalog()
    return cat, Store(tmp_path / "r.sqlite"), {e.name: e for e in cat.entries if e.op == "add"}


def _choice(res, name_prefix):
    return next(c for c in res.choices if c.op == "add" and c.types == {"T": name_prefix})


def test_safe_only_takes_the_proven_safe_variant_and_says_why_not_the_others(add):
    cat, store, v = add
    verified(store, v["add_bf16_safe"], "safe")
    verified(store, v["add_bf16_vec"], "unsafe", median_us=1.0)
    verified(store, v["add_f16_safe"], "safe", scope="cases:qwen3-4b")        # per-case only
    res = resolve("safe-only", "cpu", cat, store, "prover-test")
    bf, f16 = _choice(res, "bf16"), _choice(res, "f16")
    assert bf.variant == "add_bf16_safe" and "unsafe" in bf.passed_over["add_bf16_vec"]
    assert f16.variant is None and "not proven for all dims" in f16.passed_over["add_f16_safe"]
    assert "add" in res.to_json()["missing_ops"] and "silu_mul" in res.to_json()["missing_ops"]


def test_safe_only_refuses_an_older_checker_another_device_and_failed_numerics(add):
    cat, store, v = add
    verified(store, v["add_bf16_safe"], "safe", checker="prover-old")
    verified(store, v["add_f16_safe"], "safe", device_kind=GPU)
    res = resolve("safe-only", "cpu", cat, store, "prover-test")
    assert "no proof by the current checker prover-test" in _choice(res, "bf16").passed_over["add_bf16_safe"]
    # the current checker's proofs of the same PTX (made anywhere) join the numerics measured before
    e = v["add_bf16_safe"]
    store.put(variant_hash=e.hash, ptx_sha256="p-" + e.hash[:8], checker_version="prover-test", stage="proof",
              op=e.op, name=e.name, tool_version="t", payload={"proofs": dict.fromkeys(PROPS, "unknown")})
    assert "not proven for all dims" in _choice(resolve("safe-only", "cpu", cat, store, "prover-test"),
                                                "bf16").passed_over["add_bf16_safe"]
    store.put(variant_hash=e.hash, ptx_sha256="p-" + e.hash[:8], checker_version="prover-test", stage="proof",
              op=e.op, name=e.name, tool_version="t", payload={"proofs": dict.fromkeys(PROPS, "proven"),
                                                               "scopes": dict.fromkeys(PROPS, "all-dims")})
    assert _choice(resolve("safe-only", "cpu", cat, store, "prover-test"), "bf16").variant == "add_bf16_safe"
    verified(store, v["add_bf16_safe"], "safe", checker="prover-old")
    assert "no complete verify result" in _choice(res, "f16").passed_over["add_f16_safe"]
    verified(store, v["add_bf16_safe"], "rejected", numerics="fail")
    res = resolve("safe-only", "cpu", cat, store, "prover-test")
    assert "numerics fail" in _choice(res, "bf16").passed_over["add_bf16_safe"]
    res = resolve("safe-only", "gpu", cat, store, "prover-test")
    assert _choice(res, "f16").variant == "add_f16_safe"


def test_fastest_takes_the_fastest_conformant_variant(add):
    cat, store, v = add
    verified(store, v["add_bf16_safe"], "safe", device_kind=GPU, median_us=5.0)
    verified(store, v["add_bf16_vec"], "unsafe", device_kind=GPU, median_us=4.0, proofs="unknown")
    verified(store, v["add_f16_safe"], "safe", device_kind=GPU, median_us=5.0)
    verified(store, v["add_f16_vec"], "rejected", device_kind=GPU, median_us=1.0)
    res = resolve("fastest", "gpu", cat, store, "prover-test")
    assert _choice(res, "bf16").variant == "add_bf16_vec" and "slower" in _choice(res, "bf16").passed_over["add_bf16_safe"]
    assert _choice(res, "f16").variant == "add_f16_safe" and "rejected" in _choice(res, "f16").passed_over["add_f16_vec"]


def test_fastest_weighs_every_timed_case_not_only_the_largest(add):
    cat, store, v = add
    # vec wins the largest case (the only one the first rows time) but loses every other named case
    verified(store, v["add_bf16_safe"], "safe", device_kind=GPU, median_us=5.0)
    verified(store, v["add_bf16_vec"], "unsafe", device_kind=GPU, median_us=4.0)
    assert _choice(resolve("fastest", "gpu", cat, store, "prover-test"), "bf16").variant == "add_bf16_vec"
    verified(store, v["add_bf16_safe"], "safe", device_kind=GPU, median_us=5.0,
              cases={"big": 5.0, "a": 1.0, "b": 1.0})
    verified(store, v["add_bf16_vec"], "unsafe", device_kind=GPU, median_us=4.0,
              cases={"big": 4.0, "a": 2.0, "b": 2.0, "only-vec": 0.1})
    c = _choice(resolve("fastest", "gpu", cat, store, "prover-test"), "bf16")
    assert c.variant == "add_bf16_safe" and "over 3 named cases" in c.why
    assert "1 named case(s) left out, timed for only some candidates: only-vec" in c.why
    # `kreg verify` says so too, naming the variant timed at fewer cases, and only for that op and types
    notes = uneven_timing(cat, store, "gpu", {"add"})
    assert len(notes) == 1 and notes[0].startswith("add bf16: 1 named case(s)") and "not for add_bf16_safe" in notes[0]
    assert uneven_timing(cat, store, "gpu", {"silu_mul"}) == [] and uneven_timing(cat, store, "cpu", {"add"}) == []
    verified(store, v["add_bf16_safe"], "safe", device_kind=GPU, median_us=5.0,
              cases={"big": 5.0, "a": 1.0, "b": 1.0, "only-vec": 0.2})
    assert uneven_timing(cat, store, "gpu", {"add"}) == []


def test_a_profile_ranks_safe_variants_by_speed_and_overrides_per_named_case(tmp_path):
    cat, store = load_catalog(), Store(tmp_path / "r.sqlite")
    v = {e.name: e for e in cat.entries if e.op == "gemv"}
    a, b = v["gemv_bf16_safe"], v["gemv_bf16_safe_r1"]
    verified(store, a, "safe", device_kind=GPU, median_us=9.0, cases={"qwen3-0.6b-qkv": 6.0, "qwen3-4b-o": 9.0})
    verified(store, b, "safe", device_kind=GPU, median_us=9.9, cases={"qwen3-0.6b-qkv": 5.0, "qwen3-4b-o": 12.0})
    pick = lambda res: next(c for c in res.choices if c.op == "gemv" and c.types == {"DT": "bf16"})
    for profile in ("safe-only", "fastest"):
        c = pick(resolve(profile, "gpu", cat, store, "prover-test"))
        assert c.variant == a.name and "geometric mean" in c.why, profile      # 7.3 us vs 7.7 us
        assert list(c.by_case) == ["qwen3-0.6b-qkv"] and c.by_case["qwen3-0.6b-qkv"].variant == b.name
        assert c.by_case["qwen3-0.6b-qkv"].dims == cat.ops["gemv"].cases["qwen3-0.6b-qkv"]
        assert "qwen3-0.6b-qkv" in c.passed_over[b.name]
    # the other way round: b is the default, a runs at the o projection only
    verified(store, b, "safe", device_kind=GPU, median_us=9.9, cases={"qwen3-0.6b-qkv": 3.0, "qwen3-4b-o": 12.0})
    c = pick(resolve("safe-only", "gpu", cat, store, "prover-test"))
    assert c.variant == b.name and {n: cc.variant for n, cc in c.by_case.items()} == {"qwen3-4b-o": a.name}
    # without timings safe-only keeps its order by name, and overrides nothing
    store2 = Store(tmp_path / "r2.sqlite")
    verified(store2, a, "safe", device_kind=GPU)
    verified(store2, b, "safe", device_kind=GPU)
    c = pick(resolve("safe-only", "gpu", cat, store2, "prover-test"))
    assert c.variant == a.name and c.by_case == {}


def test_profiles_rank_by_the_time_as_the_engine_runs_it_only_where_every_candidate_has_one(tmp_path):
    cat, store = load_catalog(), Store(tmp_path / "r.sqlite")
    v = {e.name: e for e in cat.entries if e.op == "gemv"}
    a, b = v["gemv_bf16_safe"], v["gemv_bf16_safe_r1"]
    pick = lambda: next(c for c in resolve("safe-only", "gpu", cat, store, "prover-test").choices
                        if c.op == "gemv" and c.types == {"DT": "bf16"})

    def rec(e, plain, engine=None):
        ptx = "p-" + e.hash[:8]
        store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version="prover-test", stage="proof", op=e.op,
                  name=e.name, tool_version="t", payload={"proofs": dict.fromkeys(PROPS, "proven"),
                                                          "scopes": dict.fromkeys(PROPS, "all-dims")})
        cases = {n: {"median_us": t} | ({"engine_us": engine[n]} if engine else {}) for n, t in plain.items()}
        speed = {"median_us": max(plain.values()), "cases": cases}
        if engine:
            speed["engine_us"] = max(engine.values())
        store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version="prover-test", device_kind=GPU,
                  stage="verdict", op=e.op, name=e.name, tool_version="t",
                  payload={"verdict": "safe", "numerics": "pass", "speed": speed})

    plain_a, plain_b = {"x": 5.0, "y": 5.0}, {"x": 4.0, "y": 4.0}       # b faster in plain graphs
    rec(a, plain_a, {"x": 3.0, "y": 3.0})                               # a faster as the engine runs it
    rec(b, plain_b)                                                     # b's record predates engine_us: no mix
    assert pick().variant == b.name and "as the engine runs it" not in pick().why
    rec(b, plain_b, {"x": 3.5, "y": 3.5})
    assert pick().variant == a.name and "as the engine runs it" in pick().why
