"""What a test session computes once for all its pytest-xdist workers: a value kept as JSON in the session's
folder (KREG_TEST_PROOFS, made by tests/conftest.py) under a key, made by whichever worker asks first while the
others wait for it under a file lock and read it back, rather than make it again. Without the folder (a test
run outside pytest's session) the value is simply made."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
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
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(dump(got), default=str))
        tmp.replace(path)
        return got
