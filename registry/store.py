"""The results store: SQLite (WAL), keyed by what was checked — variant hash, PTX sha256, checker version,
device kind and stage. Proofs are device-independent (device kind ""); numerics, speed and verdicts
belong to a device kind (the GPU's name and driver, or the CPU emulator with its version). A write never
replaces a better result with a worse one: a proof merges property by property (an `unknown` never
overwrites a decided verdict of the same PTX and checker), and stages that did not run are not written.
Each write is one transaction, so concurrent writers lose nothing. A store of schema 1 (keyed by kreg's
version and "cpu"/"gpu") is migrated on open; its proofs carry checker version "legacy"."""
from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from .catalog import home

SCHEMA_VERSION = 2
LEGACY_CHECKER = "legacy"      # proofs migrated from schema 1: which checker made them is unknown
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results2 (
    variant_hash    TEXT NOT NULL,
    ptx_sha256      TEXT NOT NULL,
    checker_version TEXT NOT NULL,       -- "" for stages the checker does not decide
    device_kind     TEXT NOT NULL,       -- "" for proofs (device-independent)
    stage           TEXT NOT NULL,       -- proof | numerics | speed | verdict
    op              TEXT NOT NULL,
    name            TEXT NOT NULL,
    tool_version    TEXT NOT NULL,
    payload         TEXT NOT NULL,       -- JSON
    created_at      REAL NOT NULL,
    PRIMARY KEY (variant_hash, ptx_sha256, checker_version, device_kind, stage)
);
"""
KEY = ("variant_hash", "ptx_sha256", "checker_version", "device_kind", "stage")
COLS = KEY + ("op", "name", "tool_version")
RANK = {"proven": 2, "refuted": 2, "unknown": 0}


class StoreError(RuntimeError):
    """The store cannot be used (corrupt, newer schema, unwritable): an environment error."""


class Store:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else home() / "results.sqlite"
        self.notes: list[str] = []           # what opening it did (recreated, migrated), for the user
        self.read_only = False               # a store kreg can read but not write: results read, none stored
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size == 0:
                self.notes.append(f"{self.path} was empty (0 bytes, truncated?); a new results store was "
                                  "created in its place: earlier results are gone")
            with closing(self._connect()) as db, db:
                db.executescript(SCHEMA)
                row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                version = int(row[0]) if row else None
                if version is not None and version > SCHEMA_VERSION:
                    raise StoreError(f"{self.path} has schema version {version}, newer than this kreg "
                                     f"({SCHEMA_VERSION}): upgrade kreg")
                if version == 1:
                    n = _migrate_v1(db)
                    self.notes.append(f"{self.path}: migrated {n} results from schema 1 (proofs marked "
                                      f"checker version {LEGACY_CHECKER!r}, not current)")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as e:
            if _kind(e) == "read-only" and self._readable():
                self.read_only = True
                self.notes.append(f"the results store {self.path} is read-only: its results are read, none "
                                  "can be stored")
                return
            raise StoreError(problem(self.path, e, "opened")) from None
        except OSError as e:
            raise StoreError(f"the results store {self.path} cannot be opened: {e}") from None

    def _readable(self) -> bool:
        """Whether a store that cannot be written can be read as it is (current schema)."""
        for mode in ("mode=ro", "immutable=1"):
            try:
                with closing(sqlite3.connect(f"file:{self.path}?{mode}", uri=True)) as db:
                    row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                    if row and int(row[0]) == SCHEMA_VERSION:
                        self._ro_uri = f"file:{self.path}?{mode}"
                        return True
                    return False
            except (sqlite3.Error, ValueError):
                continue
        return False

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return sqlite3.connect(self._ro_uri, uri=True)
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA busy_timeout=60000")
        db.isolation_level = "IMMEDIATE"   # `with db:` then takes the write lock at BEGIN
        return db

    def put(self, *, variant_hash: str, ptx_sha256: str, checker_version: str = "", device_kind: str = "",
            stage: str, op: str, name: str, tool_version: str, payload: dict) -> None:
        """Write one stage's result. A proof merges with the stored one of the same key, property by
        property, keeping a decided verdict over an `unknown`."""
        key = (variant_hash, ptx_sha256, checker_version, device_kind, stage)
        if self.read_only:
            raise StoreError(f"the results store {self.path} is read-only: the {stage} result of {op}/{name} "
                             "cannot be stored (the store is intact; make it writable or set KREG_HOME to "
                             "another folder)")
        try:
            with closing(self._connect()) as db, db:
                if stage == "proof":
                    old = db.execute("SELECT payload FROM results2 WHERE " + " AND ".join(f"{k}=?" for k in KEY),
                                     key).fetchone()
                    if old:
                        payload = merge_proofs(json.loads(old[0]), payload)
                db.execute("INSERT OR REPLACE INTO results2 VALUES (?,?,?,?,?,?,?,?,?,?)",
                           (*key, op, name, tool_version, json.dumps(payload, sort_keys=True, default=str),
                            time.time()))
        except sqlite3.DatabaseError as e:
            raise StoreError(problem(self.path, e, "written")) from None

    def latest(self, variant_hash: str, stage: str, **where) -> dict | None:
        """The newest row of a variant and stage, optionally for a given PTX, checker version and device
        kind."""
        rows = self.query(variant_hash=variant_hash, stage=stage, **where)
        return rows[-1] if rows else None

    def query(self, **where) -> list[dict]:
        bad = set(where) - set(COLS)
        if bad:
            raise StoreError(f"cannot filter on {sorted(bad)}")
        sql = f"SELECT {', '.join(COLS)}, payload, created_at FROM results2"
        if where:
            sql += " WHERE " + " AND ".join(f"{k}=?" for k in where)
        try:
            with closing(self._connect()) as db:
                rows = db.execute(sql + " ORDER BY created_at", tuple(where.values())).fetchall()
        except sqlite3.DatabaseError as e:
            raise StoreError(problem(self.path, e, "read")) from None
        n = len(COLS)
        return [dict(zip(COLS, r[:n]), payload=json.loads(r[n]), created_at=r[n + 1]) for r in rows]


def _kind(e: sqlite3.Error) -> str:
    name = getattr(e, "sqlite_errorname", "") or ""
    text = str(e).lower()
    if name.startswith("SQLITE_READONLY") or "readonly" in text or "read-only" in text:
        return "read-only"
    if name.startswith("SQLITE_FULL") or "disk is full" in text or "no space" in text:
        return "full"
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text:
        return "corrupt"
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        return "cannot-open"
    return "other"


def problem(path: Path, e: sqlite3.Error, doing: str) -> str:
    """A sentence for a store that could not be opened, read or written: what happened and what to do.
    Only a store that is damaged is ever said to be replaceable; an intact one is never to be discarded."""
    kind = _kind(e)
    if kind == "read-only":
        return (f"the results store {path} is read-only and cannot be {doing} ({e}): it is intact; make it and "
                "its folder writable, or set KREG_HOME to another folder")
    if kind == "full":
        return (f"the disk holding the results store {path} is full ({e}): free some space and run again; the "
                "results stored so far are kept")
    if kind == "cannot-open":
        return (f"the results store {path} cannot be {doing} ({e}): check that its folder exists and is "
                "writable (the store itself was not changed)")
    if kind == "corrupt":
        return (f"the results store {path} is damaged ({e}): restore it from a backup, or move it aside (kreg "
                "then starts a new one, without the earlier results)")
    return f"the results store {path} cannot be {doing} ({e}); it was not changed"


def merge_proofs(old: dict, new: dict) -> dict:
    """Property by property, the new verdict unless it is `unknown` where the old one was decided."""
    out = dict(new)
    proofs, details = dict(new.get("proofs", {})), dict(new.get("details") or {})
    for p, st in (old.get("proofs") or {}).items():
        if RANK.get(st, 0) > RANK.get(proofs.get(p, "unknown"), 0):
            proofs[p] = st
            if (old.get("details") or {}).get(p) is not None:
                details[p] = old["details"][p]
    out["proofs"], out["details"] = proofs, details
    return out


def _migrate_v1(db) -> int:
    """Schema 1 rows into results2: proofs under checker version "legacy", other stages under the old
    device name ("cpu"/"gpu") with the PTX sha256 the variant's proof row named, if any."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name='results'").fetchone():
        return 0
    rows = db.execute("SELECT variant_hash, tool_version, device, kind, op, name, payload, created_at "
                      "FROM results").fetchall()
    sha = {}
    for h, _, _, kind, _, _, payload, _ in rows:
        if kind == "proof":
            sha[h] = json.loads(payload).get("ptx_sha256") or sha.get(h, "")
    for h, tool, device, kind, op, name, payload, created in rows:
        p = json.loads(payload)
        ptx = (p.get("ptx_sha256") if isinstance(p, dict) else None) or sha.get(h, "")
        checker = LEGACY_CHECKER if kind in ("proof", "verdict") else ""
        dev = "" if kind == "proof" else device
        db.execute("INSERT OR IGNORE INTO results2 VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (h, ptx, checker, dev, kind, op, name, tool, payload, created))
    db.execute("ALTER TABLE results RENAME TO results_v1")
    return len(rows)
