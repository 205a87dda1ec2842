"""Shared fixtures: an isolated KREG_HOME per test session, the gpu marker's skip, the session's folder of
results shared by the pytest-xdist workers (helpers/session.py), the registry's compiles made once for all of them
(helpers/ptx_cache.py) and the order tests start in (helpers/schedule.py)."""
import os
import shutil
import tempfile

import pytest

from helpers import schedule
from helpers.ptx_cache import EVERY_COMPILE, share_compiles


def _has_gpu() -> bool:
    if os.environ.get("KREG_NO_GPU"):
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


HAS_GPU = _has_gpu()


def pytest_configure(config):
    if not hasattr(config, "workerinput") and "KREG_TEST_PROOFS" not in os.environ:    # the controller, first
        config._kreg_proofs = os.environ["KREG_TEST_PROOFS"] = tempfile.mkdtemp(prefix="kreg-test-proofs-")


def pytest_unconfigure(config):
    folder = getattr(config, "_kreg_proofs", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("KREG_TEST_PROOFS", None)


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none found; run on the device)")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip)
    items[:] = schedule.order(items, int(getattr(config, "workerinput", {}).get("workercount", 1)))


@pytest.fixture(autouse=True, scope="session")
def kreg_home(tmp_path_factory, request):
    home = tmp_path_factory.mktemp("kreg_home")
    old = os.environ.get("KREG_HOME")
    os.environ["KREG_HOME"] = str(home)
    if (int(getattr(request.config, "workerinput", {}).get("workercount", 1)) > 1 and "KREG_TEST_PROOFS" in os.environ
            and any(it.name == EVERY_COMPILE for it in request.session.items)):
        share_compiles(os.environ["KREG_TEST_PROOFS"])   # that test and the workers' proofs would compile them all again
    yield home
    if old is None:
        os.environ.pop("KREG_HOME", None)
    else:
        os.environ["KREG_HOME"] = old
    shutil.rmtree(home, ignore_errors=True)
