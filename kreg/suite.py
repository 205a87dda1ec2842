"""The conformance suite as pytest: one test per variant of the registry (built-in kernels plus
$KREG_HOME/kernels), each verified as `kreg verify` does, in a child process with a time limit.

    KREG_HOME=~/.kreg KREG_DEVICE=cpu python -m pytest --pyargs kreg.suite [-k argmax]

Environment: KREG_DEVICE (cpu | gpu, default cpu), KREG_TIMEOUT (seconds for a variant's conformance stage, default 300),
KREG_JOBS (variants at once; default the CPU count on cpu, 1 on gpu), KREG_SEED (default 0),
KREG_PROVE (0: numerics only), KREG_HYPOTHESIS_EXAMPLES (default 3)."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from kreg.registry.catalog import load_catalog
from kreg.pipeline import Options, verify_variant

DEVICE = os.environ.get("KREG_DEVICE", "cpu")
CATALOG = load_catalog()
ENTRIES = [e for e in CATALOG.entries if DEVICE == "gpu" or not e.variant.vendor]   # a library routine needs the GPU
KEYS = [f"{e.op}/{e.name}" for e in ENTRIES]


def verify_all(opts: Options, isolate: bool = True, keys=None) -> dict[str, dict]:
    """The registry's variants (those of keys, default all) on DEVICE, KREG_JOBS at a time: each stage in
    its own child process with limits (isolate), or in a pool of long-lived worker processes (faster; no
    limits)."""
    entries = [e for k, e in zip(KEYS, ENTRIES) if keys is None or k in keys]
    names = [f"{e.op}/{e.name}" for e in entries]
    require_device()
    jobs = int(os.environ.get("KREG_JOBS", 0)) or (1 if DEVICE == "gpu" else os.cpu_count() or 1)
    timeout = float(os.environ.get("KREG_TIMEOUT", 300))
    if not isolate:
        with verify_pool(jobs) as pool:
            futures = [submit_verify(pool, name, opts) for name in names]
            return dict(zip(names, (f.result() for f in futures)))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda e: verify_variant(e, CATALOG.ops[e.op], DEVICE, replace(opts, timeout_s=timeout)),
                                entries))
    return dict(zip(names, results))


def require_device() -> None:
    """Skip (the emulator cannot be opened here) rather than fail every variant."""
    from kreg.conformance.harness import open_harness
    if DEVICE == "cpu":
        try:
            open_harness("cpu")
        except RuntimeError as e:
            pytest.skip(str(e))


def verify_pool(jobs: int):
    """A pool of jobs long-lived worker processes for submit_verify (spawned: safe with threads and CUDA)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    return ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"))


def submit_verify(pool, key: str, opts: Options):
    """The Future of one variant's VariantReport (key: op/name) on DEVICE, every stage in a worker of pool."""
    from kreg.pipeline import verify_in_process
    entry = CATALOG.find(key)
    return pool.submit(verify_in_process, entry, CATALOG.ops[entry.op], DEVICE, opts)


def selected_keys(request) -> set[str]:
    """The variants of the tests pytest selected (so `-k argmax` verifies only argmax's variants)."""
    return {it.callspec.params["key"] for it in request.session.items
            if hasattr(it, "callspec") and "key" in it.callspec.params}


@pytest.fixture(scope="module")
def registry_verdicts(request):
    """The full verdicts: proofs (safe variants need all four) and numerics."""
    return verify_all(Options(seed=int(os.environ.get("KREG_SEED", 0)), speed=False,
                              prove=os.environ.get("KREG_PROVE", "1") != "0"), keys=selected_keys(request))


def test_registry_metadata_is_valid():
    assert not CATALOG.errors, "\n".join(map(str, CATALOG.errors))


@pytest.mark.parametrize("key", KEYS)
def test_variant_is_not_rejected(registry_verdicts, key):
    r = registry_verdicts[key]
    why = "\n".join(r.reasons)
    assert r.numerics == "pass", f"{key} numerics {r.numerics} on {DEVICE}:\n{why}"
    if r.safety == "safe" and r.proofs is None:
        pytest.skip("numerics pass; this run has the checker off (KREG_PROVE=0, or a numerics-only suite whose proofs "
                    "another test asserts), so a safe verdict cannot be reached here")
    assert r.verdict in ("safe", "unsafe", "unverified"), f"{key} {r.verdict} on {DEVICE}:\n{why}"


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
        from kreg.checker.ptx.compile import compile_cuda
        from kreg.conformance.numerics import run_numerics
        from kreg.conformance.shapes import dims_strategy
        if registry_verdicts[key].numerics != "pass":
            pytest.skip("numerics already fail at the named and seeded cases")
        entry = CATALOG.find(key)
        v, op = entry.variant, CATALOG.ops[entry.op]
        dims = data.draw(dims_strategy(op, v, _fitting(op, v, budget)), label="dims")
        ptx = None if v.vendor else compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
        num = run_numerics(_device(), ptx, v, op, {"hypothesis": dims},
                           seed=int(os.environ.get("KREG_SEED", 0)))
        assert num.status == "pass", "\n".join(num.failures())
    return test_variant_on_hypothesis_shapes


def _fitting(op, variant, budget: int) -> int:
    """budget, or the bytes of the variant's buffers at the op's smallest dims where those exceed it (a
    variant's scratch, e.g. a fixed split count's partials, can outgrow the CPU's 16 KB at any shape)."""
    from kreg.conformance.shapes import footprint
    try:
        return max(budget, footprint(op, variant, {d: lo for d, (lo, _) in op.dims.items()}))
    except (ValueError, ZeroDivisionError, OverflowError):
        return budget


_DEVICES = {}


def _device():
    from kreg.conformance.harness import open_harness
    if DEVICE not in _DEVICES:
        _DEVICES[DEVICE] = open_harness(DEVICE)
    return _DEVICES[DEVICE]


test_variant_on_hypothesis_shapes = _hypothesis_test()
