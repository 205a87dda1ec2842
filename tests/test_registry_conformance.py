"""Every registry variant through `kreg verify`'s conformance checks on the CPU emulator, in a pool of
worker processes (small cases; one hypothesis-chosen shape each; the broken-variant tests cover the
per-variant time limit). The checker's verdicts on the registry
are not asserted here (the prover's own tests do; they take minutes): users who want the full verdict
run kreg.conformance.suite on their KREG_HOME (`python -m pytest --pyargs kreg.conformance.suite`)."""
import os

import pytest

os.environ.setdefault("KREG_HYPOTHESIS_EXAMPLES", "1")   # read when the suite module is imported
from kreg.conformance.suite import (test_registry_metadata_is_valid, test_variant_is_not_rejected,  # noqa: F401
                                    test_variant_on_hypothesis_shapes, verify_all)
from kreg.registry.verify import Options  # noqa: E402


@pytest.fixture(scope="module")
def registry_verdicts():
    return verify_all(Options(prove=False, speed=False, ragged=1, cpu_case_bytes=32 << 10, cpu_ragged_bytes=32 << 10),
                      isolate=False)
