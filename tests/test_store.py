import multiprocessing as mp

from kreg.registry.store import SCHEMA_VERSION, Store, StoreError


def test_round_trip(tmp_path):
    s = Store(tmp_path / "r.sqlite")
    s.put("h1", "0.1", "cpu", "verdict", "add", "v1", {"verdict": "safe", "x": [1, 2]})
    assert s.get("h1", "0.1", "cpu", "verdict") == {"verdict": "safe", "x": [1, 2]}
    assert s.get("h1", "0.1", "gpu", "verdict") is None
    s.put("h1", "0.1", "cpu", "verdict", "add", "v1", {"verdict": "rejected"})   # replaces
    rows = s.query(op="add")
    assert len(rows) == 1 and rows[0]["payload"] == {"verdict": "rejected"}


def test_newer_schema_is_refused(tmp_path):
    import sqlite3
    s = Store(tmp_path / "r.sqlite")
    db = sqlite3.connect(s.path)
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    try:
        Store(s.path)
    except StoreError as e:
        assert "newer" in str(e)
    else:
        raise AssertionError("a newer schema must be refused")


def _writer(path, worker, n):
    s = Store(path)
    for i in range(n):
        s.put(f"h{worker}-{i}", "0.1", "cpu", "verdict", "op", f"v{i}", {"worker": worker, "i": i})


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
