"""The tensor-core prefill's registered builds: the unsafe longest-rows-first variant compiles the safe
kernel's very source (kernels/include/kreg_prefill_tc.cuh), and the -D paths the registry uses differ
from the block-order build only where they should (emulated outputs identical to the registered safe
variant's on a ragged shape after a cached prefix: the order of the row tiles, the mask compares kept to the
diagonal tiles and the rescale skipped on an unchanged max change no arithmetic)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kreg.checker.ptx.bind import bind, buffer_sizes
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.emulator.machine import Memory, run_bound
from kreg.conformance.dtypes import decode, encode
from kreg.registry.catalog import load_catalog
from kreg.runtime import parsed

CAT = load_catalog()


def _code(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("//")]


def test_the_unsafe_build_compiles_the_safe_kernel():
    """Both sources are the one include of the shared kernel: the unsafe build differs only by its options."""
    for name in ("attention_prefill_tc_bf16_safe", "attention_prefill_tc_lf_bf16", "attention_prefill_tc_lf_f16"):
        assert _code(CAT.find(name).variant.source_path.read_text()) == ['#include "kreg_prefill_tc.cuh"']
    assert "-DKREG_LONGEST_FIRST=1" in CAT.find("attention_prefill_tc_lf_bf16").variant.options
    assert "-DKREG_LONGEST_FIRST=1" not in CAT.find("attention_prefill_tc_bf16_safe").variant.options


def _out_bits(v, dims, seed=3) -> np.ndarray:
    op = CAT.ops[v.op]
    rng = np.random.default_rng(seed)
    module = parsed(compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx)
    mem, ptrs = Memory(), {}
    for name, nbytes in buffer_sizes(v, op, dims).items():
        ptrs[name] = mem.alloc(nbytes, name)
        if op.params[name].role == "out":
            mem.write(ptrs[name], np.full(nbytes, 0xFF, np.uint8))
        else:
            mem.write(ptrs[name], encode(rng.standard_normal(op.shape(name, dims)) * 2, v.types["DT"]))
    for bl in bind(v, op, module, dims, ptrs):
        run_bound(module, bl, mem)
    bits = np.frombuffer(mem.read(ptrs["out"], buffer_sizes(v, op, dims)["out"]), np.uint16)
    assert np.isfinite(decode(bits, v.types["DT"])).all()       # every output written
    return bits


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_the_unsafe_build_computes_what_the_safe_one_does(dt):
    dims = {"T": 130, "Hq": 2, "Hkv": 1, "S": 150, "start": 20}    # 3 row tiles, the last ragged; 3 key tiles
    safe = _out_bits(CAT.find(f"attention_prefill_tc_{dt}_safe").variant, dims)
    lf = _out_bits(CAT.find(f"attention_prefill_tc_lf_{dt}").variant, dims)
    assert np.array_equal(safe, lf)


def test_a_rescale_skipped_for_one_row_half_is_caught(tmp_path):
    """The vote that skips the rescale must cover both row halves of the warp: over several key tiles
    (the small shapes of test_kernels_emulated have one), a max change seen only in row gr + 8 is lost."""
    from helpers.emulated import mismatches, mutated
    entry = CAT.find("attention_prefill_tc_f16_safe")
    src = entry.variant.source_path.read_text()
    (tmp_path / "broken.cu").write_text(mutated(src, "mx0 == m0 && mx1 == m1", "mx0 == m0"))
    broken = dataclasses.replace(entry.variant, source="broken.cu", path=str(tmp_path / "broken.yaml"))
    dims = {"T": 130, "Hq": 2, "Hkv": 1, "S": 150, "start": 20}
    assert not mismatches(entry, dims)
    assert mismatches(entry, dims, broken)
