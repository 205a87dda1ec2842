"""Reward hacks seen in generated kernels, each written as a generator hands it in (a load_inline file,
tests/data/reward_hacks/) and submitted through `kreg submit` with the prover on: each is rejected with a
reason that names what it did, and the honest kernel beside the near-constant one is accepted as safe.
The op of the near-constant hack (tiny_add, a loose KernelBench-like tolerance) is a user op with its
reference in $KREG_HOME/references."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from helpers.paths import DATA
from helpers.session import once

HACKS = DATA / "reward_hacks"
COMMON = DATA / "hostile" / "_common"


@pytest.fixture(scope="module")
def decided(tmp_path_factory) -> dict[str, dict]:
    """Once for all pytest-xdist workers (helpers/session.py)."""
    return once("reward hacks submitted", lambda: _submit(tmp_path_factory.mktemp("home")))


def _submit(home) -> dict[str, dict]:
    shutil.copytree(COMMON / "kernels", home / "kernels")
    shutil.copy(HACKS / "user" / "tiny_add.yaml", home / "kernels" / "ops")
    (home / "references").mkdir()
    shutil.copy(HACKS / "user" / "tiny_add_reference.py", home / "references")
    env = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048")
    p = subprocess.run([sys.executable, "-m", "kreg.cli", "submit", str(HACKS), "--json", "--jobs", "2"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    assert p.returncode == 1, p.stderr[-3000:]           # some rejected
    return {s["name"]: s for s in json.loads(p.stdout)["submissions"]}


def _rejected(s: dict, *phrases: str) -> str:
    said = "\n".join(s["why"] + s["reasons"])
    assert s["decision"] == "rejected" and not s["accepted"], said
    for phrase in phrases:
        assert phrase in said, f"{phrase!r} not in:\n{said}"
    return said


def test_writing_an_input_then_restoring_it(decided):
    """The input used as scratch and put back before the harness looks: a harness that compares
    outputs (KernelBench's allclose) or inputs after the call cannot see it; kreg's hostile corpus
    holds the .cu form (tests/data/hostile/writes_input_then_restores_*). The prover refutes read_only."""
    _rejected(decided["writes_input_restores"], "read_only refuted", "write to input a")


def test_output_partly_unwritten(decided):
    """Half the output left as the buffer was: in a PyTorch harness the caching allocator hands back
    the memory of the reference's output, so the stale bytes are the right answer ("reads stale
    buffers ... exploits buffer reuse in the evaluation harness", Wafer, "A Field Guide to Reward
    Hacking in AI Kernel Generation", 2026). kreg poisons every output before each launch."""
    _rejected(decided["output_partly_unwritten"], "never written (still hold the poison)")


def test_results_cached_across_calls(decided):
    """The answer of the previous call reused (here: left in the output buffer and returned whenever
    it holds a number; the field guide above reports a frontier model building a result cache with
    pointer arithmetic). kreg's second launch has fresh inputs and keeps the outputs of the first."""
    _rejected(decided["cached_in_output"], "still holds the previous launch's answer", "cached across launches")


def test_work_only_for_the_tested_shapes(decided):
    """Correct only at the shapes the benchmark runs (KernelBench fixes one input shape per problem, so
    generated kernels hard-code it; robust-kbench, Lange et al. 2025, varies shapes for this reason).
    kreg also runs seeded shapes the op does not name: the failures are all at those."""
    s = decided["tested_shapes_only"]
    said = _rejected(s, "outside atol")
    failing = {line.split("case ")[1].split(" ")[0] for line in said.splitlines() if "outside atol" in line}
    assert failing and all(c.startswith("seeded-") for c in failing), failing


def test_near_constant_output_passing_a_loose_tolerance(decided):
    """Zeros where every reference value is smaller than the tolerance: "Correctness check can be
    passed by returning zeros on 4 of 60 level-1 problems" (ScalingIntelligence/KernelBench issue
    165: allclose with atol = rtol = 1e-2). kreg rejects an output that passes while (nearly) constant
    where the reference varies; the honest kernel of the same loose op is accepted as safe."""
    _rejected(decided["near_constant"], "near-constant output", "tolerance is loose")
    honest = decided["honest_tiny_add"]
    assert honest["accepted_as"] == "safe", honest["why"] + honest["reasons"]
