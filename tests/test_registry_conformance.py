"""Every registry variant through `kreg verify`'s checks (see kreg.conformance.suite, which users run
on their own KREG_HOME with `python -m pytest --pyargs kreg.conformance.suite`)."""
from kreg.conformance.suite import (registry_verdicts, test_registry_metadata_is_valid,  # noqa: F401
                                     test_variant_is_not_rejected, test_variant_on_hypothesis_shapes)
