"""The results store: SQLite (WAL) with a versioned schema, keyed by variant hash, tool version, device
and kind of result. Each write is one transaction, so concurrent writers lose nothing."""
from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from .catalog import home

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    variant_hash TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    device       TEXT NOT NULL,
    kind         TEXT NOT NULL,          -- proof | numerics | speed | verdict
    op           TEXT NOT NULL,
    name         TEXT NOT NULL,
    payload      TEXT NOT NULL,          -- JSON
    created_at   REAL NOT NULL,
    PRIMARY KEY (variant_hash, tool_version, device, kind)
);
"""


class StoreError(RuntimeError):
    pass


class Store:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else home() / "results.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.executescript(SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise StoreError(f"{self.path} has schema version {row[0]}, newer than this kreg "
                                 f"({SCHEMA_VERSION}): upgrade kreg")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA busy_timeout=60000")
        db.isolation_level = "IMMEDIATE"   # `with db:` then takes the write lock at BEGIN
        return db

    def put(self, variant_hash: str, tool_version: str, device: str, kind: str, op: str, name: str,
            payload: dict) -> None:
        with closing(self._connect()) as db, db:
            db.execute("INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?)",
                       (variant_hash, tool_version, device, kind, op, name, json.dumps(payload, sort_keys=True),
                        time.time()))

    def get(self, variant_hash: str, tool_version: str, device: str, kind: str) -> dict | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT payload FROM results WHERE variant_hash=? AND tool_version=? AND device=? "
                             "AND kind=?", (variant_hash, tool_version, device, kind)).fetchone()
        return json.loads(row[0]) if row else None

    def query(self, **where) -> list[dict]:
        cols = ("variant_hash", "tool_version", "device", "kind", "op", "name")
        bad = set(where) - set(cols)
        if bad:
            raise StoreError(f"cannot filter on {sorted(bad)}")
        sql = "SELECT variant_hash, tool_version, device, kind, op, name, payload, created_at FROM results"
        if where:
            sql += " WHERE " + " AND ".join(f"{k}=?" for k in where)
        with closing(self._connect()) as db:
            rows = db.execute(sql + " ORDER BY created_at", tuple(where.values())).fetchall()
        return [dict(zip(cols, r[:6]), payload=json.loads(r[6]), created_at=r[7]) for r in rows]
