"""A new op registered from outside the kreg tree, with its float64 reference, and a generated kernel
for it accepted as safe with the prover on: the README's worked example run as written (its files are
examples/user_op/, quoted verbatim in the README), and the same reference from a throwaway installed
package that declares a `kreg.ops` entry point. A user reference never replaces a built-in one."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT

EXAMPLE = ROOT / "examples" / "user_op"
README = (ROOT / "README.md").read_text()


def _section() -> str:
    start = README.index("## For teams feeding a generator's output to `kreg submit`")
    return README[start:README.index("\n## ", start)]


def _run(cmd: list[str] | str, home: Path, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048", **env)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=600, cwd=ROOT,
                          shell=isinstance(cmd, str))


def _accepted_safe(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads(p.stdout)
    assert doc["accepted_as"] == "safe" and set(doc["proofs"].values()) == {"proven"}, doc["why"] + doc["reasons"]
    assert set(doc["proof_scopes"].values()) == {"all-dims"} and doc["numerics"] == "pass"
    return doc


def test_the_readme_worked_example_is_accepted_as_safe(tmp_path):
    section = _section()
    for f in ("relu_sq.yaml", "relu_sq_reference.py", "relu_sq_kernel.py", "relu_sq_kernel.yaml"):
        assert (EXAMPLE / f).read_text() in section, f"the README does not quote examples/user_op/{f} as it is"
    [commands] = re.findall(r"```\n(H=.*?)```", section, re.S)
    home = tmp_path / "home"
    script = commands.replace("kreg submit examples/user_op/relu_sq_kernel.py",
                              f"{sys.executable} -m kreg.cli submit examples/user_op/relu_sq_kernel.py --json")
    doc = _accepted_safe(_run(script, home))
    assert doc["op"] == "relu_sq" and doc["installed"] == str(home / "kernels/safe/relu_sq/relu_sq_generated.yaml")
    assert any("host function relu_sq" in d for d in doc["intake"]["dropped"])
    listed = _run([sys.executable, "-m", "kreg.cli", "list", "--submitted", "--json"], home)
    assert [v["name"] for v in json.loads(listed.stdout)] == ["relu_sq_generated"]


def test_a_reference_from_an_installed_package_entry_point(tmp_path):
    site = tmp_path / "site"
    (site / "team_refs").mkdir(parents=True)
    (site / "team_refs" / "__init__.py").write_text(
        "import numpy as np\n\ndef relu_sq_f64(x, **_):\n"
        "    v = np.maximum(np.asarray(x, dtype=np.float64), 0.0)\n    return {'y': v * v}\n")
    info = site / "team_refs-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: team-refs\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[kreg.ops]\nrelu_sq = team_refs:relu_sq_f64\n")
    home = tmp_path / "home"
    (home / "kernels" / "ops").mkdir(parents=True)
    (home / "kernels" / "ops" / "relu_sq.yaml").write_text((EXAMPLE / "relu_sq.yaml").read_text())
    p = _run([sys.executable, "-m", "kreg.cli", "submit", str(EXAMPLE / "relu_sq_kernel.py"), "--json"], home,
             PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    _accepted_safe(p)
    missing = _run([sys.executable, "-m", "kreg.cli", "submit", str(EXAMPLE / "relu_sq_kernel.py"), "--json",
                    "--force"], home)                        # the package not on the path: no reference
    assert missing.returncode == 1 and "no float64 reference named 'relu_sq'" in missing.stdout


def test_a_user_reference_never_replaces_a_built_in_one(tmp_path, monkeypatch):
    from kreg.conformance import plugins
    from kreg.conformance.references import REFERENCES
    builtin = REFERENCES["add"]
    (tmp_path / "references").mkdir()
    (tmp_path / "references" / "evil.py").write_text(
        "from kreg.conformance.references import reference\n\n@reference\ndef add(a, b, **_):\n"
        "    return {'out': a * 0}\n\n@reference\ndef evil_other(**_):\n    return {}\n")
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    problems = plugins.load_plugins()
    assert REFERENCES["add"] is builtin and "evil_other" not in REFERENCES      # nothing half-registered
    assert any("a float64 reference named 'add' is already registered" in p for p in problems), problems
