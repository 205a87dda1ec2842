"""The conformance suite as pytest: one test per variant of the registry (built-in kernels plus
$KREG_HOME/kernels), each verified as `kreg verify` does, in a child process with a time limit.

    KREG_HOME=~/.kreg KREG_DEVICE=cpu python -m pytest --pyargs kreg.conformance.suite

Environment: KREG_DEVICE (cpu | gpu, default cpu), KREG_TIMEOUT (seconds per variant, default 600),
KREG_JOBS (variants at once; default the CPU count on cpu, 1 on gpu), KREG_SEED (default 0)."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from kreg.registry.catalog import load_catalog
from kreg.registry.verify import Options, run_isolated

DEVICE = os.environ.get("KREG_DEVICE", "cpu")
CATALOG = load_catalog()
KEYS = [f"{e.op}/{e.name}" for e in CATALOG.entries]


@pytest.fixture(scope="module")
def registry_verdicts():
    from kreg.conformance.devices import open_device
    if DEVICE == "cpu":
        try:
            open_device("cpu")
        except RuntimeError as e:
            pytest.skip(str(e))
    jobs = int(os.environ.get("KREG_JOBS", 0)) or (1 if DEVICE == "gpu" else os.cpu_count() or 1)
    timeout = float(os.environ.get("KREG_TIMEOUT", 600))
    opts = Options(seed=int(os.environ.get("KREG_SEED", 0)), speed=False)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda e: run_isolated(e, CATALOG.ops[e.op], DEVICE, timeout, opts), CATALOG.entries))
    return dict(zip(KEYS, results))


def test_registry_metadata_is_valid():
    assert not CATALOG.errors, "\n".join(map(str, CATALOG.errors))


@pytest.mark.parametrize("key", KEYS)
def test_variant_is_not_rejected(registry_verdicts, key):
    r = registry_verdicts[key]
    why = "\n".join(r["reasons"])
    if r["safety"] == "safe" and r["numerics"] == "pass" and "checker: not available" in why:
        pytest.skip("numerics pass, but without kreg.checker.prove a safe variant cannot be proven")
    assert r["numerics"] == "pass", f"{key} numerics {r['numerics']} on {DEVICE}:\n{why}"
    assert r["verdict"] != "rejected", f"{key} rejected on {DEVICE}:\n{why}"


def _hypothesis_test():
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError:
        @pytest.mark.parametrize("key", KEYS)
        def test_variant_on_hypothesis_shapes(key):
            pytest.skip("hypothesis is not installed")
        return test_variant_on_hypothesis_shapes

    examples = int(os.environ.get("KREG_HYPOTHESIS_EXAMPLES", 3))
    budget = int(os.environ.get("KREG_HYPOTHESIS_BYTES", 16 << 10 if DEVICE == "cpu" else 16 << 20))

    @pytest.mark.parametrize("key", KEYS)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
                                     HealthCheck.too_slow])
    @given(data=st.data())
    def test_variant_on_hypothesis_shapes(registry_verdicts, key, data):
        """Numerics (all checks) at hypothesis-chosen dims inside the op's ranges and requirements."""
        from kreg.checker.compile import compile_cuda
        from kreg.conformance.numerics import run_numerics
        from kreg.conformance.shapes import dims_strategy
        if registry_verdicts[key]["numerics"] != "pass":
            pytest.skip("numerics already fail at the named and seeded cases")
        entry = CATALOG.find(key)
        v, op = entry.variant, CATALOG.ops[entry.op]
        dims = data.draw(dims_strategy(op, v, budget), label="dims")
        ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
        num = run_numerics(_device(), ptx, v, op, {"hypothesis": dims},
                           seed=int(os.environ.get("KREG_SEED", 0)))
        assert num.status == "pass", "\n".join(num.failures())
    return test_variant_on_hypothesis_shapes


_DEVICES = {}


def _device():
    from kreg.conformance.devices import open_device
    if DEVICE not in _DEVICES:
        _DEVICES[DEVICE] = open_device(DEVICE)
    return _DEVICES[DEVICE]


test_variant_on_hypothesis_shapes = _hypothesis_test()
