"""The safe wgmma GEMM (kernels/safe/gemm/gemm_wgmma_safe.cu) on the CPU: its configurations (the registered
cp.async pipeline with wgmma.wait_group 1 every step, at other tiles and stage counts; loads two steps ahead;
cp.async stages with wait_group 0) against the reference through the emulator; a stage refilled while the
wgmmas reading it are in flight is caught by the emulator (it reads wgmma operands as late as the wait)
and never proven race-free by the prover, for the register-staged pair and for the registered pipeline."""
import dataclasses

import pytest

from kreg.checker.ptx.compile import compile_cuda

from helpers.emulated import CAT, mismatches
from helpers.gemm_wgs_configs import pipeline_config, staged_config
from helpers.recorded import prove_recorded

ENTRY = CAT.find("gemm_wgs_bf16_safe")
DIMS = ({"T": 130, "N": 320, "K": 520}, {"T": 5, "N": 8, "K": 8})


@pytest.mark.parametrize("config", [(160, 1, -1), (128, 1, 4), (160, 1, 3)], ids=str)
def test_configuration_matches_reference_on_the_emulator(config):
    v = staged_config(ENTRY.variant, *config)
    for dims in DIMS:
        assert mismatches(ENTRY, dims, v) == []


@pytest.mark.parametrize("config", [(160, 3), (128, 5)], ids=str)
def test_pipeline_configuration_matches_reference_on_the_emulator(config):
    v = pipeline_config(ENTRY.variant, "pipe", config[0], "pipe", config[1])
    for dims in DIMS:
        assert mismatches(ENTRY, dims, v) == []


def test_registered_configuration_is_the_pipeline():
    assert {"-DKREG_PIPE=1", "-DKREG_STAGES=4", "-DKREG_BN=256"} <= set(ENTRY.variant.options)


DEEP = ("        mma_step<BF>(acc, s0, wg);\n        store_step(s1, xa, wa);",     # the KREG_DEEP path
        "        mma_step<BF>(acc, s0, wg);\n        store_step(s0, xa, wa);")
PIPE = ("        mma_step<BF>(acc, s0 + j * STAGE_BYTES, wg);\n#endif\n        wgmma_wait1();",   # the registered KREG_PIPE
        "        mma_step<BF>(acc, s0 + j * STAGE_BYTES, wg);\n#endif\n")                 # path without its wait_group 1


def _broken(tmp_path, old, new, opts):
    src = ENTRY.variant.source_path.read_text()
    assert old in src
    (tmp_path / "broken.cu").write_text(src.replace(old, new))
    v = dataclasses.replace(ENTRY.variant, source="broken.cu", path=str(tmp_path / "broken.yaml"))
    if opts:
        v = staged_config(v, *opts)
    return dataclasses.replace(v, source="broken.cu", path=str(tmp_path / "broken.yaml"))


@pytest.mark.parametrize("mutation", ["deep", "pipe"])
def test_stage_overwritten_in_flight_is_caught_and_never_proven(tmp_path, mutation):
    old, new = DEEP if mutation == "deep" else PIPE
    v = _broken(tmp_path, old, new, (160, 1, -1) if mutation == "deep" else None)
    assert any(mismatches(ENTRY, dims, v) for dims in DIMS[:1])
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
    res = prove_recorded(v, CAT.ops["gemm"], ptx, timeout_ms=4000, budget_ms=30000).verdicts
    assert res["race_free"].status != "proven", res["race_free"].reason
