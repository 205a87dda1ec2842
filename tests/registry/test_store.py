"""The results store: keyed by what was checked, merges proofs without losing a decided verdict,
migrates a schema-1 file, says so when it was empty, refuses a corrupt or newer one clearly, and loses
nothing under concurrent writers."""
import multiprocessing as mp
import shutil
import sqlite3

import pytest

from kreg.registry.store import LEGACY_CHECKER, SCHEMA_VERSION, Store, StoreError

from helpers.paths import DATA

V1 = DATA / "store_v1.sqlite"     # written by kreg 0.1.0's store (schema 1)


def _put(s, stage="verdict", payload=None, **kw):
    key = dict(variant_hash="h1", ptx_sha256="p1", checker_version="", device_kind="cpu", stage=stage,
               op="add", name="v1", tool_version="0.1") | kw
    s.put(payload=payload or {}, **key)


def test_round_trip_and_keys(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    _put(s, payload={"verdict": "safe"})
    _put(s, payload={"verdict": "rejected"}, device_kind="gpu (H100)")
    assert s.latest("h1", "verdict", device_kind="cpu")["payload"] == {"verdict": "safe"}
    assert s.latest("h1", "verdict", device_kind="gpu (H100)")["payload"] == {"verdict": "rejected"}
    assert s.latest("h1", "verdict", ptx_sha256="other") is None
    _put(s, payload={"verdict": "unsafe"})                      # the same key: replaced
    assert len(s.query(device_kind="cpu")) == 1


def test_an_unknown_proof_never_overwrites_a_decided_one(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    proven = {"proofs": {"read_only": "proven", "race_free": "refuted", "in_bounds": "unknown"},
              "scopes": {"read_only": "all-dims", "race_free": None, "in_bounds": None},
              "details": {"read_only": {"status": "proven", "scope": "all-dims"}}}
    _put(s, "proof", proven, checker_version="prover-x", device_kind="")
    later = {"proofs": {"read_only": "unknown", "race_free": "unknown", "in_bounds": "proven"},
             "details": {"read_only": {"status": "unknown", "reason": "time budget"}}}
    _put(s, "proof", later, checker_version="prover-x", device_kind="")
    got = s.latest("h1", "proof", checker_version="prover-x")["payload"]
    assert got["proofs"] == {"read_only": "proven", "race_free": "refuted", "in_bounds": "proven"}
    assert got["details"]["read_only"] == {"status": "proven", "scope": "all-dims"}
    assert got["scopes"]["read_only"] == "all-dims"
    _put(s, "proof", later, checker_version="prover-y", device_kind="")   # another checker: its own row
    assert s.latest("h1", "proof", checker_version="prover-y")["payload"]["proofs"]["read_only"] == "unknown"


def test_schema_1_store_is_migrated_without_loss(tmp_path):
    path = tmp_path / "old.sqlite"
    shutil.copy(V1, path)
    old = sqlite3.connect(path).execute("SELECT variant_hash, kind, payload FROM results").fetchall()
    s = Store(path)
    assert any("migrated 4 results" in n for n in s.notes)
    rows = s.query()
    assert len(rows) == len(old) == 4
    assert {(r["variant_hash"], r["stage"], str(r["payload"])) for r in rows} == \
        {(h, k, str(__import__("json").loads(p))) for h, k, p in old}
    proof = next(r for r in rows if r["stage"] == "proof")
    assert proof["checker_version"] == LEGACY_CHECKER and proof["device_kind"] == ""
    assert proof["ptx_sha256"] == proof["payload"]["ptx_sha256"]
    num = next(r for r in rows if r["stage"] == "numerics")
    assert num["device_kind"] == "cpu" and num["ptx_sha256"] == proof["ptx_sha256"]
    assert Store(path).notes == []                                  # migrated once


def test_empty_store_is_recreated_and_says_so(tmp_path):
    path = tmp_path / "r.sqlite"
    path.write_bytes(b"")
    s = Store(path)
    assert any("empty" in n and "earlier results are gone" in n for n in s.notes)
    _put(s)
    assert len(s.query()) == 1


def test_corrupt_store_is_a_clear_error(tmp_path):
    path = tmp_path / "r.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="is damaged.*move it aside"):
        Store(path)


def test_newer_schema_is_refused(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    db = sqlite3.connect(s.path)
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        Store(s.path)


def _writer(path, worker, n):
    s = Store(path)
    for i in range(n):
        _put(s, payload={"worker": worker, "i": i}, variant_hash=f"h{worker}-{i}")


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "r.sqlite"
    Store(path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 60)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    rows = Store(path).query()
    assert len(rows) == 6 * 60
    assert {(r["payload"]["worker"], r["payload"]["i"]) for r in rows} == {(w, i) for w in range(6) for i in range(60)}


def test_the_cli_says_when_it_recreated_an_empty_store(tmp_path):
    import os
    import subprocess
    (tmp_path / "results.sqlite").write_bytes(b"")
    p = subprocess.run(["kreg", "verify", "add_bf16_safe", "--no-prove"], env=dict(os.environ, KREG_HOME=str(tmp_path)),
                       capture_output=True, text=True, timeout=300)
    assert "was empty" in " ".join(p.stderr.split()) and "earlier results are gone" in " ".join(p.stderr.split())
