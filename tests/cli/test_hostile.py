"""The hostile corpus (tests/data/hostile/<case>/): each case is what a user would submit (kernels/ with op
and variant YAML and .cu files) plus case.yaml saying how kreg must answer. Each runs through the real
`kreg` CLI in a subprocess with a fresh KREG_HOME holding the case (and the small `hadd` op of
tests/data/hostile/_common): the submission is rejected with the reason the manifest names (and never
echoes what `never_echo` names), the exit code is the one documented, `kreg list` still works
afterwards and the results store is intact.

case.yaml keys: about, run (kreg arguments), exit, reason (a substring of the output), and optionally
absent (a variant that must not be listed), never_echo, stderr (a substring of stderr), pad ({file:
bytes} to grow a file to), symlink ({file: target}), swap_cached_ptx (a source whose PTX replaces
the cached PTX of the case's variant). Every case must pass: there is no expected-failure escape."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.hostile import CASES, COMMON, HOSTILE, manifest, store_intact

TIMEOUT = 120


def kreg(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048")
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "kreg.cli", *args], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def _stage(name: str, m: dict, home: Path) -> None:
    shutil.copytree(COMMON / "kernels", home / "kernels")
    shutil.copytree(HOSTILE / name / "kernels", home / "kernels", dirs_exist_ok=True, symlinks=True)
    for rel, size in (m.get("pad") or {}).items():
        p = home / "kernels" / rel
        filler = ("// " if p.suffix == ".cu" else "# ") + "x" * 76 + "\n"
        with open(p, "a") as f:
            f.write(filler * (size // len(filler) + 1))
    for rel, target in (m.get("symlink") or {}).items():
        os.symlink(target, home / "kernels" / rel)
    if m.get("swap_cached_ptx"):
        _swap_cached_ptx(home, m["run"][1], HOSTILE / name / m["swap_cached_ptx"])


def _swap_cached_ptx(home: Path, variant: str, other: Path) -> None:
    """Compile the variant's source into the PTX cache (as an earlier run would have), then replace the
    cached .ptx with the PTX of another source, leaving the recorded sha256 as it was."""
    from kreg.checker.ptx.compile import compile_cuda
    old = os.environ.get("KREG_HOME")
    os.environ["KREG_HOME"] = str(home)
    try:
        src = home / "kernels" / "unsafe" / "hadd" / f"{variant}.cu"
        compile_cuda(src.read_text(), src.name)
        good = compile_cuda(other.read_text(), use_cache=False).ptx
    finally:
        if old is None:
            del os.environ["KREG_HOME"]
        else:
            os.environ["KREG_HOME"] = old
    cached = [p for p in (home / "cache" / "ptx").glob("*.ptx") if not p.name.startswith("exact-")]   # by compile key
    assert len(cached) == 1, cached
    cached[0].write_text(good)


@pytest.mark.parametrize("name", CASES)
def test_hostile_case_is_rejected_and_kreg_survives(name, tmp_path):
    m = manifest(name)
    home = tmp_path / "home"
    home.mkdir()
    _stage(name, m, home)
    args = [str(a) for a in m["run"]]
    if args[0] == "verify":
        args.append("--json")
    r = kreg(home, *args)
    said = r.stdout + r.stderr
    if args[0] == "verify" and r.stdout.strip():
        said += "\n".join(w for v in json.loads(r.stdout)["variants"] for w in v["reasons"])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert m["reason"] in said, f"expected {m['reason']!r} in:\n{said[-4000:]}"
    assert r.returncode == m["exit"], said[-3000:]
    if m.get("stderr"):
        assert m["stderr"] in r.stderr, r.stderr[-3000:]
    if m.get("never_echo"):
        assert m["never_echo"] not in said
    after = kreg(home, "list", "--json")
    assert after.returncode == 0, after.stderr[-3000:]
    listed = {v["name"] for v in json.loads(after.stdout)}
    assert "add_bf16_safe" in listed
    if m.get("absent"):
        assert m["absent"] not in listed
    store_intact(home)
    if args[0] == "verify" and m["exit"] == 1 and "--no-prove" not in args:   # a decided rejection is stored
        with sqlite3.connect(home / "results.sqlite") as db:
            rows = db.execute("SELECT payload FROM results2 WHERE stage='verdict' AND name=?", (args[1],)).fetchall()
        assert rows and json.loads(rows[0][0])["verdict"] == "rejected"


def test_every_case_has_a_manifest_with_the_keys():
    assert len(CASES) >= 25
    for name in CASES:
        m = manifest(name)
        assert {"about", "run", "exit", "reason"} <= set(m), name
        assert m["exit"] in (0, 1, 2, 3), name
