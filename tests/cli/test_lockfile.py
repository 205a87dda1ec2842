"""Lock files as users make and load them: `kreg lock` (in a subprocess) pins what safe-only resolves
from the store, as JSON that reads back to the same entries; `kreg.torch.use_lock`, `plan.from_lock`
and `kreg run --lock` load exactly those artifacts and refuse a lock whose entry was tampered with (the
PTX, the variant, the verdict, the proofs, the checker version), an op it does not name, or a lock
for another device."""
import copy
import json
import os
import re
import subprocess
import sys

import pytest

from kreg import runtime
from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.engine import plan as P
from kreg.engine.errors import EngineError
from kreg.registry.catalog import load_catalog
from kreg.registry.lockfile import FORMAT, Lock, LockEntry, LockError, check, read
from kreg.registry.store import Store

from helpers.torch_store import ptx_sha, record, safe_bf16

OPS = ("rms_norm", "silu_mul")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "home"))
    cat, store = load_catalog(), Store()
    for e in safe_bf16(cat, OPS).values():
        record(store, e)
    return tmp_path, cat, store


def kreg(*args, home_dir):
    env = dict(os.environ, KREG_HOME=str(home_dir))
    return subprocess.run([sys.executable, "-m", "kreg.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_kreg_lock_writes_what_safe_only_resolves_and_it_reads_back(home):
    tmp, cat, store = home
    out = tmp / "kreg.lock"
    p = kreg("lock", "--profile", "safe-only", "--device", "cpu", "--op", "rms_norm", "--op", "silu_mul", "-o", str(out),
             home_dir=tmp / "home")
    assert p.returncode == 1 and not out.exists()                   # the f16 variants are not verified
    assert "rms_norm, silu_mul" in p.stderr and "kreg verify --device cpu --op rms_norm --op silu_mul" in p.stderr
    p = kreg("lock", "--device", "cpu", "--op", "rms_norm", "--op", "silu_mul", "--dtype", "bf16", "-o", str(out),
             home_dir=tmp / "home")
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert data["kreg_lock"] == FORMAT and data["profile"] == "safe-only" and data["checker_version"] == CHECKER_VERSION
    want = safe_bf16(cat, OPS)
    assert {e["op"]: e["variant"] for e in data["entries"]} == {op: e.name for op, e in want.items()}
    for e in data["entries"]:
        v = want[e["op"]]
        assert e["variant_hash"] == v.hash and e["ptx_sha256"] == ptx_sha(v) and e["verdict"] == "safe"
        assert set(e["proofs"].values()) == {"proven"} and set(e["scopes"].values()) == {"all-dims"}
        assert e["device_kind"].startswith("cpu") and e["types"] == {"DT": "bf16"}
    lock = read(out)
    assert lock.dumps() == out.read_text()                          # round trip, byte for byte
    check(lock, cat, store, CHECKER_VERSION, runtime.device("cpu").describe())
    assert kreg("lock", "--device", "gpu", "-o", str(tmp / "g.lock"), home_dir=tmp / "home").returncode == 3
    assert kreg("lock", "--op", "nope", home_dir=tmp / "home").returncode == 2


def _lock(cat, store) -> Lock:
    from kreg.registry.lockfile import make
    from kreg.registry.profiles import resolve
    lock, missing = make(resolve("safe-only", "cpu", cat, store, CHECKER_VERSION), store, ops=set(OPS), dtypes={"bf16"})
    assert not missing and len(lock.entries) == 2
    return lock


def _tampered(lock: Lock, **change) -> Lock:
    bad = copy.deepcopy(lock)
    e = bad.entries[0]
    bad.entries[0] = LockEntry(**{**e.__dict__, **change})
    return bad


def test_a_tampered_entry_is_refused(home):
    _, cat, store = home
    lock, kind = _lock(cat, store), runtime.device("cpu").describe()
    check(lock, cat, store, CHECKER_VERSION, kind)
    e = lock.entries[0]
    other = next(x for x in cat.entries if x.op == e.op and x.hash != e.variant_hash)
    cases = {
        "another PTX": (dict(ptx_sha256="0" * 64), "holds no verdict for PTX 000000000000"),
        "a changed source": (dict(variant_hash="f" * 64), "no variant of content hash ffffffffffff"),
        "another variant's hash": (dict(variant_hash=other.hash), f"is {other.op}/{other.name}"),
        "another checker's proof": (dict(checker_version="prover-0.1"), "a proof of checker prover-0.1"),
        "a verdict the store does not hold": (dict(verdict="unsafe"), "the store's verdict is safe"),
        "proofs the store does not hold": (dict(proofs={**e.proofs, "race_free": "unknown"}), "not the lock's"),
        "another device kind": (dict(device_kind="cpu (kreg PTX emulator 0.0)"), "not on this device"),
    }
    for what, (change, msg) in cases.items():
        with pytest.raises(LockError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            check(_tampered(lock, **change), cat, store, CHECKER_VERSION, kind)
    with pytest.raises(LockError, match=re.escape(f"made with checker {CHECKER_VERSION}; this kreg's checker is prover-0.1")):
        check(lock, cat, store, "prover-0.1", kind)
    # an unsafe variant locked under safe-only with its true verdict: refused as not safe
    unsafe = next(x for x in cat.entries if x.op == e.op and x.variant.safety == "unsafe"
                  and x.variant.types == e.types)
    record(store, unsafe, verdict="unsafe", proofs="unknown")
    row = store.latest(unsafe.hash, "verdict")
    bad = _tampered(lock, variant=unsafe.name, variant_hash=unsafe.hash, ptx_sha256=row["ptx_sha256"],
                    verdict="unsafe", proofs=dict.fromkeys(e.proofs, "unknown"))
    with pytest.raises(LockError, match="not safe: an unsafe variant"):
        check(bad, cat, store, CHECKER_VERSION, kind)


def test_plan_from_lock_loads_exactly_the_locked_ptx_and_refuses_the_rest(home):
    tmp, cat, store = home
    lock, dev = _lock(cat, store), runtime.device("cpu")
    plan = P.from_lock(lock, dev, "bf16", ops=OPS, optional=(), catalog=cat, store=store)
    assert {op: (k.name, k.module.sha256) for op, k in plan.ops.items()} == \
        {e.op: (e.variant, e.ptx_sha256) for e in lock.entries}
    with pytest.raises(EngineError, match="names no bf16 variant for gemv") as ex:
        P.from_lock(lock, dev, "bf16", ops=OPS + ("gemv",), optional=(), catalog=cat, store=store)
    assert ex.value.exit_code == 1
    with pytest.raises(EngineError, match="lock file refused: .*holds no verdict for PTX"):
        P.from_lock(_tampered(lock, ptx_sha256="0" * 64), dev, "bf16", ops=OPS, optional=(), catalog=cat, store=store)
    gpu_lock = copy.deepcopy(lock)
    gpu_lock.device = "gpu"
    with pytest.raises(EngineError, match="pins variants for --device gpu, not cpu"):
        P.from_lock(gpu_lock, dev, "bf16", ops=OPS, optional=(), catalog=cat, store=store)


def test_kreg_run_refuses_a_tampered_lock(home):
    tmp, cat, store = home
    from kreg.engine.random_model import make_random_model, shape_config
    d = make_random_model(tmp / "m", shape_config("tiny", vocab_size=1024, hidden_size=128, intermediate_size=128,
                                                  num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1))
    path = tmp / "bad.lock"
    _lock(cat, store).write(path)
    p = kreg("run", "--model", str(d), "--prompt", "hi", "--lock", str(path), home_dir=tmp / "home")
    assert p.returncode == 1 and "the lock file names no bf16 variant for embedding" in p.stderr
    engine = safe_bf16(cat, P.ENGINE_OPS)
    engine["decode_advance"] = next(e for e in cat.entries if e.op == "decode_advance" and e.variant.safety == "safe")
    for e in engine.values():
        record(store, e)
    from kreg.registry.lockfile import make
    from kreg.registry.profiles import resolve
    lock, _ = make(resolve("safe-only", "cpu", cat, store, CHECKER_VERSION), store, ops=set(engine), dtypes={"bf16"})
    assert {e.op for e in lock.entries} == set(P.ENGINE_OPS)
    assert P.from_lock(lock, runtime.device("cpu"), "bf16", catalog=cat, store=store).profile == "lock:safe-only"
    _tampered(lock, ptx_sha256="0" * 64).write(path)
    p = kreg("run", "--model", str(d), "--prompt", "hi", "--lock", str(path), home_dir=tmp / "home")
    assert p.returncode == 1 and "lock file refused" in p.stderr and "holds no verdict for PTX 000000000000" in p.stderr
    path.write_text("{}")
    p = kreg("run", "--model", str(d), "--prompt", "hi", "--lock", str(path), home_dir=tmp / "home")
    assert p.returncode == 2 and "not a kreg lock file" in p.stderr


def test_kreg_torch_use_lock_runs_the_locked_variants_only(home):
    torch = pytest.importorskip("torch")
    import kreg.torch as kt
    tmp, cat, store = home
    path = tmp / "kreg.lock"
    lock = _lock(cat, store)
    lock.write(path)
    try:
        kt.use_lock(path)
        x, w = torch.randn(2, 16).bfloat16(), torch.randn(16).bfloat16()
        kt.rms_norm(x, w)
        ex = {r["op"]: r for r in kt.explain()}["rms_norm"]
        locked = next(e for e in lock.entries if e.op == "rms_norm")
        assert ex["source"].startswith(f"lock file {path}")
        assert (ex["variant"], ex["ptx_sha256"]) == (locked.variant, locked.ptx_sha256)
        with pytest.raises(kt.NoVariantError, match="names no bf16 variant for gemv"):
            kt.linear(x[:1], torch.randn(8, 16).bfloat16())
        _tampered(lock, verdict="unsafe").write(path)
        with pytest.raises(kt.NoVariantError, match=r"use_lock\(.*\) refused: .*the store's verdict is safe"):
            kt.use_lock(path)
    finally:
        kt.use_profile("safe-only")
