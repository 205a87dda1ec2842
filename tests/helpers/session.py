"""What a test session computes once for all its pytest-xdist workers: a value kept as JSON in the session's
folder (KREG_TEST_PROOFS, made by tests/conftest.py) under a key, made by whichever worker asks first while the
others wait for it under a file lock and read it back, rather than make it again (once), or many values under keys
of their own that the workers share out, each making those no other holds (once_each). Without the folder (a test
run outside pytest's session) the value is simply made."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path


def once(key: str, make, dump=lambda x: x, load=lambda x: x):
    """make() the first time this session asks for key (stored as dump(value)), else load() of what was stored."""
    folder = os.environ.get("KREG_TEST_PROOFS")
    if not folder:
        return make()
    path = Path(folder) / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            return load(json.loads(path.read_text()))
        got = make()
        _store(path, dump(got))
        return got


def _store(path: Path, data) -> None:
    """data as JSON at path, written whole then renamed (a reader never sees half of it)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str))
    tmp.replace(path)


def once_each(prefix: str, keys, submit, jobs: int, dump=lambda x: x, load=lambda x: x) -> dict:
    """{key: value} for every key, each made once this session (stored as dump(value) under prefix + key): this
    process makes, up to jobs at a time (submit(key) -> a Future), the keys no other worker holds or has made,
    and then waits for and reads the ones the others were making. Without the session's folder, all are made."""
    folder = os.environ.get("KREG_TEST_PROOFS")
    if not folder:
        futures = {k: submit(k) for k in keys}
        return {k: f.result() for k, f in futures.items()}
    paths = {k: Path(folder) / f"{hashlib.sha256((prefix + k).encode()).hexdigest()}.json" for k in keys}
    got, held, later = {}, {}, []

    def finish(k):
        lock, fut = held.pop(k)
        got[k] = fut.result()
        _store(paths[k], dump(got[k]))
        lock.close()                     # releases the lock: the value is there for the others

    def finish_first():
        done, _ = wait([f for _, f in held.values()], return_when=FIRST_COMPLETED)
        finish(next(k for k, (_, f) in held.items() if f in done))

    for k in keys:
        while len(held) >= jobs:
            finish_first()
        lock = open(paths[k].with_suffix(".lock"), "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            later.append(k)
            continue
        if paths[k].is_file():
            got[k] = load(json.loads(paths[k].read_text()))
            lock.close()
            continue
        held[k] = (lock, submit(k))
    while held:
        finish_first()
    for k in later:
        with open(paths[k].with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if paths[k].is_file():
                got[k] = load(json.loads(paths[k].read_text()))
            else:                        # the worker that held it stopped without it
                got[k] = submit(k).result()
    return {k: got[k] for k in keys}
