"""The emulator against the GPU itself: every corpus kernel, same PTX, same inputs (needs a GPU); and,
on any machine, against the GPU outputs recorded by bench/emulator_bitexact.py."""
import sys

import numpy as np
import pytest

from helpers.paths import DATA, ROOT

sys.path.insert(0, str(DATA / "corpus"))
import cases as C  # noqa: E402

RECORDED = ROOT / "bench" / "results" / "emulator_gpu_outputs.npz"


@pytest.mark.gpu
@pytest.mark.parametrize("case", C.CASES, ids=lambda c: c.name)
def test_emulator_is_bit_exact_against_the_gpu(case):
    from kreg.checker.ptx.compile import compile_cuda
    record, _ = C.compare_with_gpu(case, compile_cuda(case.source.read_text()).ptx)
    assert record["ok"], record


@pytest.mark.skipif(not RECORDED.exists(), reason="no recorded GPU outputs (run bench/emulator_bitexact.py on a GPU)")
@pytest.mark.parametrize("case", C.CASES, ids=lambda c: c.name)
def test_emulator_matches_recorded_gpu_outputs(case):
    recorded = np.load(RECORDED)
    if not any(f.startswith(case.name + "/") for f in recorded.files):
        pytest.skip("case not in the recording")
    emu = C.emulated(case.name)
    for spec in case.args:
        b = C.parse_arg(spec)
        if isinstance(b, C.Buffer) and b.role != "in":
            ok, detail = C.compare(case, b, emu[b.name], recorded[f"{case.name}/{b.name}"].tobytes())
            assert ok, f"{b.name}: {detail}"


@pytest.mark.skipif(not RECORDED.exists(), reason="no recorded GPU outputs")
def test_exact_libm_columns_are_bit_identical_to_the_gpu():
    # libm_exact's buffer is compared as approximate because cbrtf and erff (columns 6, 7) use ex2/lg2/rcp
    # .approx inside; sinf, cosf, logf, sqrtf, hypotf, fmodf and atan2f must match bit for bit
    recorded = np.load(RECORDED)["libm_exact/o"].view(np.float32).reshape(-1, 9)
    emu = np.frombuffer(C.emulated("libm_exact")["o"], np.float32).reshape(-1, 9)
    cols = [0, 1, 2, 3, 4, 5, 8]
    assert (emu[:, cols].view(np.uint32) == recorded[:, cols].view(np.uint32)).all()
