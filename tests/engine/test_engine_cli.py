"""The engine's profiles from the results store, and `kreg run` as users run it. safe-only loads only
variants proven and conformant on this device kind, as the exact PTX the store names, and refuses to
start naming the ops that have none (and the `kreg verify` to run). The README's commands run in a
subprocess on the CPU: make a tiny random Qwen3 model (real vocabulary and tokenizer), verify the
engine's ops, run it; its greedy tokens are the float64 reference's."""
import json
import os
import subprocess
import sys

import pytest

from kreg import runtime
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.checker.emulator.machine import DEVICE_KIND
from kreg.engine import plan as P
from kreg.engine.errors import EngineError
from kreg.registry.catalog import load_catalog
from kreg.registry.results import PROPS
from kreg.registry.store import Store


def engine_variants(cat, dtype="bf16", safety="safe"):
    return [e for e in cat.entries if e.op in P.ENGINE_OPS and e.variant.safety == safety
            and (not e.variant.types or set(e.variant.types.values()) == {dtype})]


def _by_op(entries) -> dict:
    out: dict = {}
    for e in entries:
        out.setdefault(e.op, []).append(e)
    return out


def _proof_work(e) -> tuple:
    """Hopper wgmma variants last (their symbolic execution and emulation are the slowest on a CPU), then the ms of
    solver work the proof uses, from the variant's YAML (`proof: {budget_ms, used}`)."""
    return (any("compute_90a" in o for o in e.variant.options),
            e.variant.proof_budget_ms * (e.variant.raw.get("proof") or {}).get("used", 1.0))


def record(store, e, ptx, verdict="safe", kind=DEVICE_KIND, cases=None):
    store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version=CHECKER_VERSION, stage="proof", op=e.op,
              name=e.name, tool_version="t", payload={"proofs": dict.fromkeys(PROPS, "proven"),
                                                      "scopes": dict.fromkeys(PROPS, "all-dims")})
    store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version=CHECKER_VERSION, device_kind=kind, stage="verdict",
              op=e.op, name=e.name, tool_version="t", payload={
                  "verdict": verdict, "numerics": "pass",
                  "speed": cases and {"median_us": max(cases.values()),
                                      "cases": {n: {"median_us": t} for n, t in cases.items()}}})


def ptx_sha(e):
    v = e.variant
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).sha256


def test_safe_only_names_the_missing_ops_and_the_verify_to_run(tmp_path):
    cat, store, dev = load_catalog(), Store(tmp_path / "r.sqlite"), runtime.device("cpu")
    with pytest.raises(EngineError, match="run `kreg verify --device cpu` first") as ex:
        P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)
    assert ex.value.exit_code == 3
    safe = engine_variants(cat)
    for e in safe:
        if e.op not in ("silu_mul", "argmax"):
            record(store, e, ptx_sha(e))
    with pytest.raises(EngineError) as ex:
        P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)
    msg = str(ex.value)
    assert ex.value.exit_code == 1 and "no qualifying variant for silu_mul, argmax" in msg
    assert "run `kreg verify --device cpu --op silu_mul --op argmax`" in msg
    for e in safe:                                       # verified on another device kind only
        if e.op in ("silu_mul", "argmax"):
            record(store, e, ptx_sha(e), kind="gpu (NVIDIA H100 80GB HBM3, driver 13000)")
    with pytest.raises(EngineError, match="no results|another device kind|no qualifying"):
        P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)


def test_the_plan_loads_only_the_ptx_the_store_names(tmp_path):
    cat, store, dev = load_catalog(), Store(tmp_path / "r.sqlite"), runtime.device("cpu")
    safe = engine_variants(cat)
    for e in safe:
        record(store, e, ptx_sha(e) if e.op != "gemv" else "0" * 64)    # gemv: other bytes were verified
    with pytest.raises(EngineError, match="not the 000000000000 that was verified"):
        P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)
    record(store, next(e for e in safe if e.op == "gemv"), ptx_sha(next(e for e in safe if e.op == "gemv")))
    plan = P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)
    rep = {r["op"]: r for r in plan.report()}
    assert set(rep) == set(P.ENGINE_OPS) and {r["safety"] for r in rep.values()} == {"safe"}
    by_name = {e.name: e for e in safe}
    assert all(r["ptx_sha256"] == ptx_sha(by_name[r["variant"]]) for r in rep.values())
    # an unsafe variant never runs under safe-only, even if it is the only one verified for its op
    unsafe = {e.op: e for e in engine_variants(cat, safety="unsafe")}
    store2 = Store(tmp_path / "r2.sqlite")
    for e in safe:
        if e.op != "gemv":
            record(store2, e, ptx_sha(e))
    if "gemv" in unsafe:
        record(store2, unsafe["gemv"], ptx_sha(unsafe["gemv"]), verdict="unsafe")
    with pytest.raises(EngineError, match="gemv"):
        P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store2)
    assert P.from_profile("fastest", dev, "bf16", catalog=cat, store=store2)["gemv"].name == unsafe["gemv"].name


def test_an_optional_op_joins_the_plan_only_where_the_profile_resolves_it(tmp_path):
    cat, store, dev = load_catalog(), Store(tmp_path / "r.sqlite"), runtime.device("cpu")
    for e in engine_variants(cat):
        record(store, e, ptx_sha(e))
    plan = P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store, optional=P.FUSIONS)
    assert "gemv_swiglu" not in plan.ops and "silu_mul" in P.decode_ops(plan)
    fused = next(e for e in cat.entries if e.op == "gemv_swiglu" and e.variant.safety == "safe"
                 and set(e.variant.types.values()) == {"bf16"})
    record(store, fused, ptx_sha(fused))
    assert "gemv_swiglu" not in P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store).ops
    plan = P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store, optional=P.FUSIONS)
    assert plan["gemv_swiglu"].name == fused.name
    assert "gemv_swiglu" in P.decode_ops(plan) and "silu_mul" not in P.decode_ops(plan)


def test_the_fused_decode_ops_join_a_profile_plan_and_are_used_where_all_three_resolve(tmp_path):
    cat, store, dev = load_catalog(), Store(tmp_path / "r.sqlite"), runtime.device("cpu")
    for e in engine_variants(cat):
        record(store, e, ptx_sha(e))
    fused = [e for e in cat.entries if e.op in P.FUSED_DECODE and e.variant.safety == "safe"
             and set(e.variant.types.values()) == {"bf16"} and e.name.endswith("_safe")]   # not the _r1 ones
    assert sorted(e.op for e in fused) == sorted(P.FUSED_DECODE)
    for e in fused[:2]:
        record(store, e, ptx_sha(e))
    plan = P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)
    assert not P.fused_decode(plan) and "add_rms_norm" in P.decode_ops(plan)
    record(store, fused[2], ptx_sha(fused[2]))
    plan = P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)
    assert P.fused_decode(plan) and set(P.FUSED_DECODE) <= set(P.decode_ops(plan))
    assert not {"add_rms_norm", "silu_mul"} & set(P.decode_ops(plan))
    assert "rms_norm_gemv" not in P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store, optional=()).ops


def test_a_variant_timed_faster_at_a_named_case_runs_at_exactly_its_dims(tmp_path):
    cat, store, dev = load_catalog(), Store(tmp_path / "r.sqlite"), runtime.device("cpu")
    gemvs = sorted((e for e in engine_variants(cat) if e.op == "gemv"), key=lambda e: e.name)
    assert len(gemvs) >= 2, "the registry holds a second safe gemv (one row a warp) for the short-K shapes"
    for e in engine_variants(cat):
        if e.op != "gemv":
            record(store, e, ptx_sha(e))
    default, other = gemvs[0], gemvs[1]
    small, big = cat.ops["gemv"].cases["qwen3-0.6b-qkv"], cat.ops["gemv"].cases["qwen3-4b-o"]
    record(store, default, ptx_sha(default), cases={"qwen3-0.6b-qkv": 5.9, "qwen3-4b-o": 8.8, "qwen3-4b-down": 18.9})
    record(store, other, ptx_sha(other), cases={"qwen3-0.6b-qkv": 4.9, "qwen3-4b-o": 9.7, "qwen3-4b-down": 20.9})
    for e in gemvs[2:]:
        record(store, e, ptx_sha(e), cases={"qwen3-0.6b-qkv": 9.0, "qwen3-4b-o": 99.0, "qwen3-4b-down": 99.0})
    plan = P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store)
    k = plan["gemv"]
    assert k.name == default.name                      # the geometric mean over the three cases
    assert k.at(small).name == other.name and k.at(big).name == default.name
    assert k.at({"N": small["N"], "K": small["K"] + 8}).name == default.name     # exactly the case's dims only
    x = {n: dev.alloc(4096 * 4096 * 2, n) for n in ("W", "x", "y")}
    assert {ln.variant for ln in k.launches(small, x)} == {other.name}
    assert {ln.variant for ln in k.launches(big, x)} == {default.name}
    rep = next(r for r in plan.report() if r["op"] == "gemv")
    assert [(d["dims"], d["variant"]) for d in rep["by_dims"]] == [(small, other.name)]
    # an override verified on another device kind only is not taken
    store2 = Store(tmp_path / "r2.sqlite")
    for e in engine_variants(cat):
        if e.op != "gemv":
            record(store2, e, ptx_sha(e))
    record(store2, default, ptx_sha(default), cases={"qwen3-0.6b-qkv": 5.9, "qwen3-4b-o": 8.8})
    record(store2, other, ptx_sha(other), cases={"qwen3-0.6b-qkv": 4.9, "qwen3-4b-o": 11.0}, kind="cpu (elsewhere)")
    for e in gemvs[2:]:
        record(store2, e, ptx_sha(e), cases={"qwen3-0.6b-qkv": 9.0, "qwen3-4b-o": 99.0})
    assert P.from_profile("safe-only", dev, "bf16", catalog=cat, store=store2)["gemv"].by_dims == {}


def _run(cmd, home, timeout=900):
    env = dict(os.environ, KREG_HOME=str(home), PYTHONUNBUFFERED="1",     # the `kreg` of this interpreter's env
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def test_readme_kreg_run_on_a_tiny_model_on_the_cpu(tmp_path):
    home, model, small = tmp_path / "home", tmp_path / "qwen3-tiny", tmp_path / "qwen3-tiny-v16k"
    for d, extra in ((model, []), (small, ["--vocab", "16384"])):
        p = _run([sys.executable, "-m", "kreg.engine.random_model", str(d), *extra], home)
        assert p.returncode == 0, p.stderr
    p = _run(["kreg", "run", "--model", str(model), "--prompt", "Hello", "--device", "cpu"], home)
    assert p.returncode == 3 and "kreg verify --device cpu" in p.stderr
    # per engine op the safe bf16 variant whose proof is the least work (its YAML's `proof:` says how much)
    names = [min(es, key=_proof_work).name for es in _by_op(engine_variants(load_catalog())).values()]
    p = _run(["kreg", "verify", "--device", "cpu", "--jobs", "2", "--json", *names], home)
    safe_ops = {r["op"] for r in json.loads(p.stdout)["variants"] if r["verdict"] == "safe"}
    assert safe_ops == set(P.ENGINE_OPS), p.stderr[-4000:]
    # the chat template on the real vocabulary (151936: the emulator's lm_head gemv takes seconds a token)
    p = _run(["kreg", "run", "--model", str(model), "--prompt", "Hello", "--device", "cpu", "--max-new-tokens", "2",
              "--greedy", "--json"], home)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout)
    assert r["profile"] == "safe-only" and {v["safety"] for v in r["variants"]} == {"safe"}
    assert {v["op"] for v in r["variants"]} == set(P.ENGINE_OPS)
    from kreg.engine.reference import Reference
    from kreg.engine.tokenizer import Tokenizer, chat_prompt
    tok = Tokenizer(model)
    ids = tok.encode(chat_prompt("Hello"))
    assert r["prompt_tokens"] == len(ids) and r["tokens"] == Reference(model).greedy(ids, 2)
    assert r["text"] == tok.decode(r["tokens"])
    # streaming text on stdout, the variants and timings on stderr (a raw prompt, a smaller vocabulary)
    p = _run(["kreg", "run", "--model", str(small), "--prompt", "Hello", "--device", "cpu", "--max-new-tokens", "4",
              "--greedy", "--raw"], home)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "profile safe-only on cpu" in p.stderr and "gemv_bf16_safe" in p.stderr and "4 tokens" in p.stderr
    assert p.stdout == tok.decode(Reference(small).greedy(tok.encode("Hello"), 4)) + "\n"


def test_kreg_run_refuses_a_bad_model_or_device_with_a_sentence(tmp_path):
    (tmp_path / "llama").mkdir()
    (tmp_path / "llama" / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"],
                                                                "model_type": "llama"}))
    p = _run(["kreg", "run", "--model", str(tmp_path / "llama"), "--prompt", "hi"], tmp_path / "home", timeout=120)
    assert p.returncode == 2 and "unsupported architecture" in p.stderr and "Traceback" not in p.stderr
    p = _run(["kreg", "run", "--model", str(tmp_path / "none"), "--prompt", "hi"], tmp_path / "home", timeout=120)
    assert p.returncode == 2 and "no such model directory" in p.stderr and "Traceback" not in p.stderr
