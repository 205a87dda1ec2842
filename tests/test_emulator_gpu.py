"""The emulator against the GPU itself: every corpus kernel, same PTX, same inputs (needs a GPU); and,
on any machine, against the GPU outputs recorded by bench/emulator_bitexact.py."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
sys.path.insert(0, str(ROOT / "bench"))
import cases as C  # noqa: E402

RECORDED = ROOT / "bench" / "results" / "emulator_gpu_outputs.npz"


@pytest.mark.gpu
def test_emulator_is_bit_exact_against_the_gpu():
    import emulator_bitexact
    records = emulator_bitexact.run_all(None)
    bad = [r for r in records if not r["ok"]]
    assert not bad, bad


@pytest.mark.skipif(not RECORDED.exists(), reason="no recorded GPU outputs (run bench/emulator_bitexact.py on a GPU)")
@pytest.mark.parametrize("case", C.CASES, ids=lambda c: c.name)
def test_emulator_matches_recorded_gpu_outputs(case):
    from kreg.checker.compile import compile_cuda
    recorded = np.load(RECORDED)
    if not any(f.startswith(case.name + "/") for f in recorded.files):
        pytest.skip("case not in the recording")
    emu = C.run_emulated(case, compile_cuda(case.source.read_text()).ptx)
    for spec in case.args:
        b = C.parse_arg(spec)
        if isinstance(b, C.Buffer) and b.role != "in":
            ok, detail = C.compare(case, b, emu[b.name], recorded[f"{case.name}/{b.name}"].tobytes())
            assert ok, f"{b.name}: {detail}"
