"""`kreg submit --preconditions` and `--accept-preconditions` as a user runs them (a subprocess, CPU, prover
on): a generated float4 row kernel for a user op that allows any row length is rejected (in_bounds refuted:
misaligned) with the proven precondition D % 4 == 0 in its reasons and JSON; with --accept-preconditions the
condition goes into the candidate's `requires:`, the op's named case that violates it is skipped, and the
candidate is accepted as safe."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from helpers.paths import DATA, ROOT

CORPUS = DATA / "prover_corpus"
REFERENCE = '''import numpy as np

from kreg.conformance.references import reference


@reference
def rowscale_f64(x, alpha=2.0, **_):
    return {"out": float(alpha) * np.asarray(x, dtype=np.float64)}
'''


def _home(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    (home / "kernels" / "ops").mkdir(parents=True)
    (home / "references").mkdir()
    op = yaml.safe_load((CORPUS / "ops" / "rowscale.yaml").read_text()) | {"op": "rowscale_user",
                                                                             "reference": "rowscale_f64"}
    (home / "kernels" / "ops" / "rowscale_user.yaml").write_text(yaml.safe_dump(op, sort_keys=False))
    (home / "references" / "rowscale_ref.py").write_text(REFERENCE)
    cand = tmp_path / "cand"
    cand.mkdir()
    src = (CORPUS / "unsafe" / "rowscale" / "bug_row_scale_f4_misaligned.cu").read_text()
    (cand / "gen_rows.cu").write_text(src.replace("bug_row_scale_f4_misaligned", "gen_rows"))
    meta = {"op": "rowscale_user", "name": "gen_rows", "safety": "safe", "source": "gen_rows.cu", "entry": "gen_rows",
            "args": ["x", "out", "alpha", "D"], "launch": {"grid": ["M"], "block": [128]},
            "provenance": {"generator": "test"}}
    (cand / "gen_rows.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return home, cand / "gen_rows.cu", cand / "gen_rows.yaml"


def _submit(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048")
    return subprocess.run([sys.executable, "-m", "kreg.cli", "submit", *args], env=env, capture_output=True,
                          text=True, timeout=900, cwd=ROOT)


def test_preconditions_are_reported_then_accepted(tmp_path):
    home, src, meta = _home(tmp_path)
    p = _submit(home, str(src), "--meta", str(meta), "--preconditions", "--json")
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["decision"] == "rejected" and doc["proofs"]["in_bounds"] == "refuted"
    assert "misaligned" in doc["proof_details"]["in_bounds"]["reason"]
    pre = doc["preconditions"]
    assert pre["found"] and pre["requires"] == ["D % 4 == 0"] and pre["skipped_cases"] == ["odd"]
    assert any("safe if D % 4 == 0" in w for w in doc["why"])

    p = _submit(home, str(src), "--meta", str(meta), "--accept-preconditions", "--json")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["accepted_as"] == "safe" and set(doc["proofs"].values()) == {"proven"}, doc["why"] + doc["reasons"]
    assert doc["why"][0].startswith("preconditions accepted: safe if D % 4 == 0") and "skipped: odd" in doc["why"][0]
    assert doc["preconditions"]["requires"] == ["D % 4 == 0"]
    assert "case odd skipped: variant requirement D % 4 == 0 does not hold" in doc["reasons"]
    assert not any("odd" in c for c in doc["cases_run"])
    entered = yaml.safe_load(Path(doc["installed"]).read_text())
    assert entered["requires"] == ["D % 4 == 0"] and entered["safety"] == "safe"

    table = _submit(home, str(src), "--meta", str(meta), "--preconditions")      # from the store: the table
    assert "safe if D % 4 == 0" in table.stdout, table.stdout[-2000:]
