"""kreg.isolate: every outcome of a child comes back as data (value, error, timeout, memory, death),
children never nest, a killed child gives back the turn it held, and a child dies with its parent."""
import os
import signal
import subprocess
import sys
import time

import pytest

from kreg import isolate


def _nested():
    return isolate.run(os.getpid, timeout_s=5).value      # runs in place: the same pid


def _hold(turn, seconds):
    with turn:
        time.sleep(seconds)


def _grab(turn):
    with turn:
        return "got it"


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def _boom():
    raise ValueError("bad kernel")


def test_outcomes_are_data():
    assert isolate.run(abs, -3, timeout_s=30).value == 3
    got = isolate.run(_boom, timeout_s=30)
    assert got.status == "error" and got.error == "ValueError: bad kernel" and "_boom" in got.detail
    t = time.monotonic()
    got = isolate.run(time.sleep, 60, timeout_s=1)
    assert got.status == "timeout" and "time limit of 1 s" in got.error and time.monotonic() - t < 10
    got = isolate.run(bytearray, 3 << 30, timeout_s=30, memory_mb=300)
    assert got.status in ("memory", "error"), got
    got = isolate.run(_die, timeout_s=30)                              # a crash
    assert got.status == "died" and "SIGKILL" in got.error


def test_address_limit_turns_a_runaway_allocation_into_memory_error():
    got = isolate.run(bytearray, 8 << 30, timeout_s=30, memory_mb=256, start="fork", address_limit=True)
    assert got.status == "error" and "MemoryError" in got.error


def test_children_never_nest():
    got = isolate.run(_nested, timeout_s=30)
    assert got.ok and got.value != os.getpid()       # one child, and the inner run used it


def test_a_killed_child_gives_back_its_turn():
    turn = isolate.Turn(wait_s=20)
    assert isolate.run(_hold, turn, 60, timeout_s=1).status == "timeout"
    got = isolate.run(_grab, turn, timeout_s=30)
    assert got.value == "got it"


def _descendants(pid: int) -> list[str]:
    rows = [r.split() for r in subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True,
                                               text=True).stdout.splitlines()]
    kids, todo = [], [str(pid)]
    while todo:
        p = todo.pop()
        for c, pp in rows:
            if pp == p:
                kids.append(c)
                todo.append(c)
    return kids


@pytest.mark.parametrize("start", ["spawn", "forkserver"])
def test_child_dies_with_its_parent(tmp_path, start):
    """Killed, the parent takes its children with it (a fork server's child, whose parent is the server: by
    watching the caller)."""
    script = tmp_path / "parent.py"
    script.write_text("import time\nfrom kreg import isolate\nif __name__ == '__main__':\n"
                      f"    isolate.run(time.sleep, 600, timeout_s=600, start={start!r})\n")
    parent = subprocess.Popen([sys.executable, str(script)])
    time.sleep(3)
    kids = _descendants(parent.pid)
    parent.kill()
    parent.wait()
    time.sleep(1)
    assert kids, "the parent started no child"
    for k in kids:
        alive = subprocess.run(["ps", "-o", "stat=", "-p", k], capture_output=True, text=True).stdout.strip()
        assert alive == "" or alive.startswith("Z"), f"child {k} outlived its parent ({alive})"


def _hash():
    return hash("kreg"), os.environ.get("PYTHONHASHSEED")


def test_spawned_children_hash_alike():
    a, b = isolate.run(_hash, timeout_s=30).value, isolate.run(_hash, timeout_s=30).value
    assert a == b and a[1] is not None
    # a fork server's children hash as a spawned child does (the prover's set orders, and its work, follow it)
    c = isolate.run(_hash, timeout_s=30, start="forkserver", preload=("kreg.isolate",)).value
    assert c == a


def _blas_threads():
    import numpy  # noqa: F401  (the child's BLAS reads its thread count at import)
    return {n: os.environ.get(n) for n in isolate._BLAS_THREADS}


def test_parallel_children_share_the_cores(monkeypatch):
    for n in isolate._BLAS_THREADS:
        monkeypatch.delenv(n, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert isolate.share_cores(3) == 5                    # 16 cores / 3 jobs
    got = isolate.run(_blas_threads, timeout_s=60).value
    assert got == {n: "5" for n in isolate._BLAS_THREADS}
    assert isolate.share_cores(64) == 5                   # set once: a later call keeps it
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")        # the user's own choice is kept
    assert isolate.share_cores(1) == 2


def test_more_jobs_than_cores_still_get_one_thread(monkeypatch):
    for n in isolate._BLAS_THREADS:
        monkeypatch.delenv(n, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert isolate.share_cores(8) == 1
