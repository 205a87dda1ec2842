"""The safe wgmma GEMM (kernels/safe/gemm/gemm_wgmma_safe.cu) on the CPU: its other configurations (loads
two steps ahead, cp.async stages) against the reference through the emulator; a stage stored while the
wgmmas reading it are in flight is caught by the emulator (it reads wgmma operands as late as the wait)
and never proven race-free by the prover."""
import dataclasses
import sys
from pathlib import Path

import pytest

from kreg.checker.compile import compile_cuda
from kreg.checker.prove import prove_variant

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from test_kernels_emulated import CAT, mismatches  # noqa: E402
from wgs_dev import wgs_config  # noqa: E402

ENTRY = CAT.find("gemm_wgs_bf16_safe")
DIMS = ({"T": 130, "N": 320, "K": 520}, {"T": 5, "N": 8, "K": 8})


@pytest.mark.parametrize("config", [(160, 1, -1), (128, 1, 4), (160, 1, 3)], ids=str)
def test_configuration_matches_reference_on_the_emulator(config):
    v = wgs_config(ENTRY.variant, *config)
    for dims in DIMS:
        assert mismatches(ENTRY, dims, v) == []


def _broken(tmp_path):
    src = ENTRY.variant.source_path.read_text()
    old = "        mma_step<BF>(acc, s0, wg);\n        store_step(s1, xa, wa);"     # the registered KREG_DEEP path
    assert old in src
    (tmp_path / "broken.cu").write_text(src.replace(old, "        mma_step<BF>(acc, s0, wg);\n        store_step(s0, xa, wa);"))
    return dataclasses.replace(ENTRY.variant, source="broken.cu", path=str(tmp_path / "broken.yaml"))


def test_stage_overwritten_in_flight_is_caught_and_never_proven(tmp_path):
    v = _broken(tmp_path)
    assert any(mismatches(ENTRY, dims, v) for dims in DIMS[:1])
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
    res = prove_variant(v, CAT.ops["gemm"], ptx, timeout_ms=4000, budget_ms=20000, isolate=False)
    assert res["race_free"].status != "proven", res["race_free"].reason
