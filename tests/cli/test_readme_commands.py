"""The README's commands as users run them: in a subprocess, from a fresh KREG_HOME, with the checker
on. `kreg verify` must accept the safe variants of add, rms_norm and argmax as `safe`, all four
properties proven for all dims; the user pytest suite must pass on the same ops. Never skipped."""
import json
import os
import subprocess
import sys

import pytest

OPS = ("add", "rms_norm", "argmax")


def _run(cmd, home, timeout=900, cwd=None):
    env = dict(os.environ, KREG_HOME=str(home), PYTHONUNBUFFERED="1")
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def test_quick_start_kreg_verify_proves_safe_variants(tmp_path):
    cmd = ["kreg", "verify", "--device", "cpu", "--json"] + [a for op in OPS for a in ("--op", op)]
    p = _run(cmd, tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert {r["op"] for r in out["variants"]} == set(OPS)
    safe = [r for r in out["variants"] if r["safety"] == "safe"]
    assert len(safe) >= len(OPS)
    for r in safe:
        assert r["verdict"] == "safe", (r["name"], r["reasons"])
        assert r["proofs"] == dict.fromkeys(("read_only", "in_bounds", "race_free", "barrier_safe"), "proven")
        assert set(r["proof_scopes"].values()) == {"all-dims"}
        assert r["numerics"] == "pass" and r["complete"]
    for r in out["variants"]:
        assert r["verdict"] in ("safe", "unsafe"), (r["name"], r["reasons"])
    # stored as decided, and a second look at the store finds them
    from kreg.registry.store import Store
    rows = Store(tmp_path / "results.sqlite").query(stage="verdict")
    assert {r["name"] for r in rows} == {r["name"] for r in out["variants"]}
    # the safe-only profile reads them back: the verified ops' safe variants, the others named as missing
    p = _run(["kreg", "profile", "show", "safe-only", "--json"], tmp_path, timeout=120)
    assert p.returncode == 1, p.stderr                      # incomplete: the other ops were not verified
    prof = json.loads(p.stdout)
    chosen = {c["variant"] for c in prof["choices"] if c["variant"]}
    assert chosen == {r["name"] for r in safe}
    assert {"embedding", "silu_mul"} <= set(prof["missing_ops"]) and "kreg verify" in p.stderr
    p = _run(["kreg", "profile", "show", "fastest", "--device", "gpu"], tmp_path, timeout=120)
    assert p.returncode == 3 and "kreg verify --device gpu" in p.stderr


def test_user_pytest_suite_passes_with_the_prover_on(tmp_path):
    """From a folder of the user's own, as the README runs it: not this repository's pytest configuration, whose
    `-n auto` would verify every variant once per xdist worker (kreg.suite verifies them in parallel itself)."""
    expr = " or ".join(f"{op}/" for op in OPS)
    (tmp_path / "project").mkdir()
    p = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", "kreg.suite",
              "-k", f"test_variant_is_not_rejected and ({expr})"], tmp_path, cwd=tmp_path / "project")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert " passed" in p.stdout and "skipped" not in p.stdout and "failed" not in p.stdout
    n = int(p.stdout.strip().splitlines()[-1].split()[0])
    assert n >= 2 * len(OPS)


@pytest.mark.parametrize("cmd", [["kreg", "list", "--json"], ["kreg", "show", "add_bf16_safe", "--json"]])
def test_list_and_show(tmp_path, cmd):
    p = _run(cmd, tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    if cmd[1] == "list":
        assert {"op", "name", "safety", "hash", "source"} <= set(got[0]) and len(got) >= 36
    else:
        assert got["name"] == "add_bf16_safe" and got["safety"] == "safe"
