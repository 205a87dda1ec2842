"""The README's section "Using kreg kernels from PyTorch" as users run it: its commands in a subprocess
from a fresh KREG_HOME with the checker on (verify two safe variants, lock them), then its Python block
in a subprocess: the ops run the locked PTX and explain() names it."""
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

pytest.importorskip("torch")
from helpers.paths import ROOT

README = ROOT / "README.md"


def section_blocks():
    text = README.read_text()
    sec = text.split("## Using kreg kernels from PyTorch", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w*)\n(.*?)```", sec, re.S)


def test_the_readme_pytorch_section_runs_as_written(tmp_path):
    (_, shell), (lang, code) = section_blocks()[:2]
    assert lang == "python"
    env = dict(os.environ, KREG_HOME=str(tmp_path / "home"), PYTHONUNBUFFERED="1")
    for line in shell.strip().splitlines():
        if line.startswith("pip "):
            continue                                   # the package is installed already
        cmd = shlex.split(line.split("#")[0])
        assert cmd[0] == "kreg"
        p = subprocess.run([sys.executable, "-m", "kreg.cli", *cmd[1:]], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=900)
        assert p.returncode == 0, (line, p.stderr[-3000:])
    lock = json.loads((tmp_path / "kreg.lock").read_text())
    assert {e["variant"] for e in lock["entries"]} == {"rms_norm_bf16_safe", "silu_mul_bf16_safe"}
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [ln.split() for ln in p.stdout.strip().splitlines()]
    by_op = {e["op"]: e for e in lock["entries"]}
    assert {r[0] for r in rows} == {"rms_norm", "silu_mul"}
    for op, variant, sha, checker, verdict in rows:
        e = by_op[op]
        assert (variant, sha, checker, verdict) == (e["variant"], e["ptx_sha256"][:12], e["checker_version"], "safe")
