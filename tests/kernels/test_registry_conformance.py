"""Every registry variant through `kreg verify`'s conformance checks on the CPU emulator, in a pool of
worker processes (small cases; one hypothesis-chosen shape each; the broken-variant tests cover the
per-variant time limit), once per test session for all pytest-xdist workers (helpers/session.py). The
checker's verdicts are asserted by tests/checker/prover/test_prover.py for every safe variant, and
tests/cli/test_readme_commands.py runs `kreg verify` and the user suite as users run them, prover on."""
import os

import pytest

os.environ.setdefault("KREG_HYPOTHESIS_EXAMPLES", "1")   # read when the suite module is imported
from kreg.suite import (selected_keys, test_registry_metadata_is_valid,  # noqa: F401
                                    test_variant_is_not_rejected, test_variant_on_hypothesis_shapes, verify_all)
from kreg.pipeline import Options  # noqa: E402
from kreg.registry.results import VariantReport  # noqa: E402

from helpers.session import once  # noqa: E402

OPTS = Options(prove=False, speed=False, ragged=1, cpu_case_bytes=32 << 10, cpu_ragged_bytes=32 << 10)


@pytest.fixture(scope="module")
def registry_verdicts(request):
    keys = sorted(selected_keys(request))
    return once(f"registry conformance {OPTS} {keys}", lambda: verify_all(OPTS, isolate=False, keys=set(keys)),
                dump=lambda got: {k: r.to_json() for k, r in got.items()},
                load=lambda d: {k: VariantReport.from_json(r) for k, r in d.items()})
