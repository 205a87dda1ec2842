"""Proofs are device-independent: `kreg verify` reuses a stored proof of the same PTX by the current
checker when all four properties were decided, never one by another checker version or one left
partly unknown; --reprove proves again."""
import json
import os
import subprocess

from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.registry.results import PROPS
from kreg.registry.store import Store


def _verify(home, *extra):
    p = subprocess.run(["kreg", "verify", "add_bf16_safe", "--json", *extra], env=dict(os.environ, KREG_HOME=str(home)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)["variants"][0]


def test_a_decided_proof_is_reused_and_reprove_proves_again(tmp_path):
    first = _verify(tmp_path)
    assert not first.get("proof_reused") and "prove" in first["stage_seconds"]
    again = _verify(tmp_path)
    assert again["proof_reused"] and "prove" not in again["stage_seconds"]
    assert again["verdict"] == "safe" and again["proofs"] == first["proofs"]
    fresh = _verify(tmp_path, "--reprove")
    assert not fresh.get("proof_reused") and "prove" in fresh["stage_seconds"]


def test_another_checkers_or_an_undecided_proof_is_not_reused(tmp_path):
    first = _verify(tmp_path)
    store = Store(tmp_path / "results.sqlite")
    row = store.latest(first["hash"], "proof", checker_version=CHECKER_VERSION)
    with __import__("sqlite3").connect(store.path) as db:            # the stored proof becomes an old checker's
        db.execute("UPDATE results2 SET checker_version='prover-old' WHERE stage='proof'")
    assert not _verify(tmp_path).get("proof_reused")
    undecided = dict(row["payload"], details={p: {"status": "unknown", "scope": None} for p in PROPS})
    with __import__("sqlite3").connect(store.path) as db:
        db.execute("DELETE FROM results2 WHERE stage='proof'")
    store.put(variant_hash=first["hash"], ptx_sha256=first["ptx_sha256"], checker_version=CHECKER_VERSION,
              stage="proof", op="add", name="add_bf16_safe", tool_version="t", payload=undecided)
    assert not _verify(tmp_path).get("proof_reused")
