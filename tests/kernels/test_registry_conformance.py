"""Every registry variant through `kreg verify`'s conformance checks on the CPU emulator, in a pool of
worker processes (small cases; one hypothesis-chosen shape each; the broken-variant tests cover the
per-variant time limit), each variant once per test session, the pytest-xdist workers sharing the variants out
(helpers/session.py once_each; each worker with its share of the cores). The
checker's verdicts are asserted by tests/checker/prover/test_prover.py for every safe variant, and
tests/cli/test_readme_commands.py runs `kreg verify` and the user suite as users run them, prover on."""
import os

import pytest

os.environ.setdefault("KREG_HYPOTHESIS_EXAMPLES", "1")   # read when the suite module is imported
from kreg.suite import (require_device, selected_keys, submit_verify,  # noqa: F401
                        test_registry_metadata_is_valid, test_variant_is_not_rejected,
                        test_variant_on_hypothesis_shapes, verify_pool)
from kreg.pipeline import Options  # noqa: E402
from kreg.registry.results import VariantReport  # noqa: E402

from helpers.session import once_each  # noqa: E402

OPTS = Options(prove=False, speed=False, ragged=1, cpu_case_bytes=32 << 10, cpu_ragged_bytes=32 << 10)


@pytest.fixture(scope="module")
def registry_verdicts(request):
    keys = sorted(selected_keys(request))
    if not keys:
        return {}
    require_device()
    workers = int(getattr(request.config, "workerinput", {}).get("workercount", 1))
    jobs = int(os.environ.get("KREG_JOBS", 0)) or max(1, (os.cpu_count() or 1) // workers)   # workers share the cores
    with verify_pool(jobs) as pool:
        return once_each(f"registry conformance {OPTS} ", keys, lambda k: submit_verify(pool, k, OPTS), jobs,
                         dump=lambda r: r.to_json(), load=VariantReport.from_json)
