"""Launch geometry and expressions (item c): the CUDA limits live in registry/limits.py and are checked
before any work (at load for the named cases, in preflight for every case to run, in bind() and in
the emulator); division by zero and runaway values in expressions are clear errors."""
import time

import numpy as np
import pytest

from kreg.checker.emulator import machine as E
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.ptx.bind import BindError, bind
from kreg.runtime import parsed
from kreg.registry import limits as L
from kreg.registry.catalog import BUILTIN
from kreg.registry.expr import ExprError, parse, parse_condition
from kreg.registry.preflight import geometry
from kreg.registry.schema import SchemaError, load_op, load_variant

OP = load_op(BUILTIN / "ops" / "add.yaml")
SEEDED_ONLY = '["cdiv(N, 256) + max(0, 20 - N) * max(0, N - 10) * 1000000000"]'   # beyond the limit at 10 < N < 20


@pytest.mark.parametrize("grid,block,shared,fragment", [
    ((2**31, 1, 1), (1, 1, 1), 0, "grid.x = 2147483648 is outside the CUDA limit [1, 2147483647]"),
    ((1, 65536, 1), (1, 1, 1), 0, "grid.y = 65536 is outside the CUDA limit [1, 65535]"),
    ((1, 1, 65536), (1, 1, 1), 0, "grid.z = 65536"),
    ((0, 1, 1), (1, 1, 1), 0, "grid.x = 0 is outside"),
    ((1, 1, 1), (1025, 1, 1), 0, "block.x = 1025 is outside the CUDA limit [1, 1024]"),
    ((1, 1, 1), (1, 1025, 1), 0, "block.y = 1025"),
    ((1, 1, 1), (1, 1, 65), 0, "block.z = 65 is outside the CUDA limit [1, 64]"),
    ((1, 1, 1), (32, 32, 2), 0, "2048 threads per block exceed the CUDA limit of 1024"),
    ((1, 1, 1), (1, 1, 1), 232449, "232449 bytes of dynamic shared memory exceed the limit of 232448"),
])
def test_each_limit(grid, block, shared, fragment):
    assert any(fragment in w for w in L.geometry_problems(grid, block, shared))


def test_the_largest_legal_launch_passes():
    assert L.geometry_problems((2**31 - 1, 65535, 65535), (1024, 1, 1), 232448) == []
    assert L.geometry_problems((1, 1, 1), (16, 1, 64), 0) == []


@pytest.mark.parametrize("text,fragment", [
    ("N // (N - N)", "division by zero in 'N // (N - N)' at {N: 5}"),
    ("N % (N - 5)", "modulo by zero"), ("cdiv(N, N - 5)", "cdiv by zero"),
    ("N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N", "a value beyond +-2**64"),
    ("(N * 4294967296) * (N * 4294967296) * 4294967296", "a value beyond"),
])
def test_expression_errors_are_clear(text, fragment):
    with pytest.raises(ExprError) as e:
        parse(text)({"N": 5})
    assert fragment in str(e.value)


def test_a_huge_expression_fails_at_once():
    e = parse("*".join(["N"] * 200))
    t = time.perf_counter()
    with pytest.raises(ExprError):
        e({"N": 2**40})
    assert time.perf_counter() - t < 0.1


def test_a_requirement_dividing_by_zero_is_a_reason_not_a_crash():
    import dataclasses
    op = dataclasses.replace(OP, requires=(parse_condition("N % (N - 1024) == 0"),))
    assert any("cannot be evaluated: modulo by zero" in w for w in op.dims_ok({"N": 1024}))


def _variant(tmp_path, grid='["cdiv(N, 2048)"]', block="[256]", shared=None):
    text = (BUILTIN / "safe" / "add" / "add_bf16.yaml").read_text()
    text = text.replace('grid: ["cdiv(N, 2048)"]', f"grid: {grid}").replace("block: [256]", f"block: {block}")
    if shared is not None:
        text = text.replace("  block:", f"  shared: {shared}\n  block:")
    (tmp_path / "add_bf16.cu").write_text((BUILTIN / "safe" / "add" / "add_bf16.cu").read_text())
    (tmp_path / "v.yaml").write_text(text)
    return load_variant(tmp_path / "v.yaml", {"add": OP})


def test_load_refuses_geometry_beyond_the_limits_naming_case_dims_and_limit(tmp_path):
    with pytest.raises(SchemaError) as e:
        _variant(tmp_path, grid='["N * 1024"]')
    assert str(e.value).endswith(
        "v.yaml: launch: launch geometry outside the CUDA limits: case qwen3-0.6b-prefill {'N': 2097152}: launch 1 "
        "(add_bf16): grid (2147483648, 1, 1) block (256, 1, 1) shared 0: grid.x = 2147483648 is outside the CUDA "
        "limit [1, 2147483647] (and 3 more)")


@pytest.mark.parametrize("kw,fragment", [
    ({"grid": '["N * N * N * N * N * N * N"]'}, "launch geometry cannot be evaluated: a value beyond"),
    ({"grid": '["cdiv(N, N - N)"]'}, "cdiv by zero"),
    ({"block": "[2048]"}, "block.x = 2048"), ({"shared": 300000}, "300000 bytes of dynamic shared memory"),
])
def test_load_refuses_other_bad_geometry(tmp_path, kw, fragment):
    t = time.perf_counter()
    with pytest.raises(SchemaError, match="launch geometry") as e:
        _variant(tmp_path, **kw)
    assert fragment in str(e.value) and time.perf_counter() - t < 2


def test_preflight_checks_any_case(tmp_path):
    v = _variant(tmp_path, grid=SEEDED_ONLY)
    why = geometry(v, OP, {"qwen3-0.6b-decode": {"N": 1024}, "seeded-N15": {"N": 15}})
    assert why == ["case seeded-N15 {'N': 15}: launch 1 (add_bf16): grid (25000000001, 1, 1) block (256, 1, 1) "
                   "shared 0: grid.x = 25000000001 is outside the CUDA limit [1, 2147483647]"]


def test_bind_and_the_emulator_refuse_out_of_limit_geometry(tmp_path):
    v = _variant(tmp_path, grid=SEEDED_ONLY)
    module = parsed(compile_cuda(v.source_path.read_text(), v.source_path.name).ptx)
    ptrs = {"a": 1 << 20, "b": 2 << 20, "out": 3 << 20}
    assert bind(v, OP, module, {"N": 1024}, ptrs)
    with pytest.raises(BindError, match="grid.x = 25000000001 is outside the CUDA limit"):
        bind(v, OP, module, {"N": 15}, ptrs)
    mem = E.Memory()
    with pytest.raises(E.EmulatorError) as e:
        E.launch(module, "add_bf16", (70000, 70000, 1), 256, 0, [np.uint64(0)] * 3 + [np.int32(1)], mem)
    assert e.value.kind == "launch-limits" and "grid.y = 70000" in str(e.value)
