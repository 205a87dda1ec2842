"""Deliberately broken variants (tests/data/broken/kernels, never in the registry), one per check: each is
rejected by the check meant for it, with a message that says what happened, on the CPU emulator and
on the GPU. Each YAML names its check and the message (`provenance.must_fail`, a regex)."""
import json
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from kreg.registry.catalog import BUILTIN, Entry, load_catalog, variant_hash
from kreg.registry.schema import load_op, load_variant
from dataclasses import replace

from kreg.pipeline import Options, verify_variant
from kreg.registry.results import VariantReport

from helpers.paths import DATA
from helpers.session import once

BROKEN = DATA / "broken" / "kernels"
OP = load_op(BUILTIN / "ops" / "add.yaml")
ENTRIES = [Entry(v, variant_hash(v), "test") for v in
           (load_variant(p, {"add": OP}) for p in sorted((BROKEN / "unsafe" / "add").glob("*.yaml")))]
NAMES = [e.name for e in ENTRIES]
# small cases on the CPU: the named cases up to 8 KiB of buffers, plus 3 seeded ragged shapes
CPU = Options(prove=False, speed=False, cpu_case_bytes=8 << 10, cpu_ragged_bytes=16 << 10, ragged=3)
GPU = Options(prove=False, speed=False, ragged=3, gpu_ragged_bytes=1 << 20, gpu_case_bytes=4 << 20)


def _has_emulator():
    try:
        import kreg.checker.emulator.machine  # noqa: F401
        return True
    except ImportError:
        return False


def _timeout(e):
    return 60 if "hang" in e.name else 300      # the hang is stopped by the emulator's step budget long before


def _verify_all(device, opts):
    jobs = 1 if device == "gpu" else max(2, os.cpu_count() or 2)
    entries = [e for e in ENTRIES if device == "cpu" or not e.variant.provenance.get("cpu_only")]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return dict(zip([e.name for e in entries],
                        pool.map(lambda e: verify_variant(e, OP, device, replace(opts, timeout_s=_timeout(e))), entries)))


@pytest.fixture(scope="module")
def cpu_results():
    if not _has_emulator():
        pytest.skip("the CPU device needs kreg.checker.emulator.machine")
    return once(f"broken variants cpu {CPU} {NAMES}", lambda: _verify_all("cpu", CPU),   # once for all workers
                dump=lambda got: {n: r.to_json() for n, r in got.items()},
                load=lambda d: {n: VariantReport.from_json(r) for n, r in d.items()})


@pytest.fixture(scope="module")
def gpu_results():
    return _verify_all("gpu", GPU)


def test_every_check_has_a_broken_variant():
    assert len(ENTRIES) == 9
    assert {e.variant.provenance["check"] for e in ENTRIES} >= {
        "inputs unchanged", "every output written (poison)", "guard bands", "fresh inputs on a second launch",
        "identical launches, identical bits", "reference comparison", "step budget"}


def _assert_fails_its_check(r, entry):
    pattern = entry.variant.provenance["must_fail"]
    assert r.verdict == "rejected" and r.numerics == "fail", json.dumps(r.to_json(), indent=1)[:3000]
    assert any(re.search(pattern, why) for why in r.reasons), \
        f"{entry.name} must fail with /{pattern}/ but said:\n" + "\n".join(r.reasons)


@pytest.mark.parametrize("name", [n for n in NAMES if "nondeterministic" not in n])
def test_broken_variant_fails_its_check_on_cpu(cpu_results, name):
    _assert_fails_its_check(cpu_results[name], ENTRIES[NAMES.index(name)])


def test_nondeterministic_atomics_fail_on_cpu(cpu_results):
    # the emulator runs blocks in a fixed order, so only the launch-history half of this kernel's
    # nondeterminism shows on the CPU; it is enough for the repeat-launch check
    _assert_fails_its_check(cpu_results["broken_nondeterministic_atomics"], ENTRIES[NAMES.index(
        "broken_nondeterministic_atomics")])


@pytest.mark.gpu
@pytest.mark.parametrize("name", [e.name for e in ENTRIES if not e.variant.provenance.get("cpu_only")
                                  and not e.variant.provenance.get("gpu_undecided")])
def test_broken_variant_fails_its_check_on_gpu(gpu_results, name):
    _assert_fails_its_check(gpu_results[name], ENTRIES[NAMES.index(name)])


@pytest.mark.gpu
def test_hung_kernel_is_not_decided_on_gpu(gpu_results):
    """On a GPU only the wall clock stops a kernel that spins forever, and the wall clock is never a verdict:
    not decided (verdict error), nothing stored."""
    r = gpu_results["broken_hangs"]
    assert r.verdict == "error" and "numerics not decided" in (r.environment_error or ""), r.reasons


def test_nan_is_reported_for_ragged_cases_only(cpu_results):
    r = cpu_results["broken_nan_when_ragged"]
    bad = [c for c in r.numerics_detail if not c["pass"]]
    good = [c for c in r.numerics_detail if c["pass"]]
    assert bad and good
    assert all(c["dims"]["N"] % 8 for c in bad) and all(c["dims"]["N"] % 8 == 0 for c in good)


def test_verify_cli_survives_hangs_and_stores_everything(tmp_path, monkeypatch, capsys):
    """`kreg verify` with a hanging, a trapping and a good variant: the others still get verdicts,
    everything is stored, the exit code says something failed."""
    from kreg.cli import main
    from kreg.registry.store import Store
    shutil.copytree(BROKEN, tmp_path / "kernels")
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    code = main(["verify", "broken_hangs", "broken_traps", "add_bf16_vec", "--json", "--timeout", "60",
                 "--no-prove"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    rows = {r["name"]: r for r in out["variants"]}
    assert set(rows) == {"broken_hangs", "broken_traps", "add_bf16_vec"}
    assert rows["broken_hangs"]["verdict"] == rows["broken_traps"]["verdict"] == "rejected"
    # --no-prove leaves the proofs undecided: no verdict is stored (it would hide a better one), but the
    # numerics that were decided are; a variant cut off by the wall-clock limit stores nothing
    assert not Store().query(stage="verdict")
    stored = {r["name"]: r["payload"] for r in Store().query(stage="numerics")}
    cut_off = {n for n, r in rows.items() if any("exceeded its time limit" in w for w in r["reasons"])}
    assert set(stored) == set(rows) - cut_off and "add_bf16_vec" in stored
    if _has_emulator():
        assert rows["add_bf16_vec"]["verdict"] == "unsafe", rows["add_bf16_vec"]["reasons"]
        assert any("step budget" in w for w in rows["broken_hangs"]["reasons"])
        assert load_catalog().find("add_bf16_vec")
    else:
        assert rows["add_bf16_vec"]["numerics"] == "not-run"
        assert any("emulator" in w for w in rows["add_bf16_vec"]["reasons"])
