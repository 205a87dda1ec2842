"""The hostile corpus (tests/data/hostile/<case>/: a submission and the case.yaml that says how kreg must
answer): its cases, their manifests, and the check that a results store survived one."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import yaml

from helpers.paths import DATA

HOSTILE = DATA / "hostile"
COMMON = HOSTILE / "_common"
CASES = sorted(p.name for p in HOSTILE.iterdir() if (p / "case.yaml").is_file())


def manifest(name: str) -> dict:
    return yaml.safe_load((HOSTILE / name / "case.yaml").read_text())


def store_intact(home: Path) -> None:
    path = home / "results.sqlite"
    if path.exists():
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            db.execute("SELECT count(*) FROM results2").fetchone()
