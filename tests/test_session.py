"""helpers/session.py once_each: two workers of one session asking for the same keys make each key exactly once
between them, both make some (neither idles while the other works), and both get every value."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from helpers.session import once_each

KEYS = [f"k{i}" for i in range(12)]


def test_two_workers_share_the_keys_and_each_key_is_made_once(tmp_path, monkeypatch):
    monkeypatch.setenv("KREG_TEST_PROOFS", str(tmp_path))
    made, got = [], {}
    pools = [ThreadPoolExecutor(max_workers=1) for _ in range(2)]

    def make(worker, key):
        time.sleep(0.05)
        made.append((worker, key))
        return {"value": key.upper()}

    def worker(w):
        got[w] = once_each("test ", KEYS, lambda k: pools[w].submit(make, w, k), 1)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(k for _, k in made) == sorted(KEYS)                    # each key once
    assert {w for w, _ in made} == {0, 1}                                # both workers made some
    assert got[0] == got[1] == {k: {"value": k.upper()} for k in KEYS}   # and both have all, in order
    assert list(got[0]) == KEYS


def test_a_third_ask_reads_back_without_making(tmp_path, monkeypatch):
    monkeypatch.setenv("KREG_TEST_PROOFS", str(tmp_path))
    pool = ThreadPoolExecutor(max_workers=2)
    first = once_each("test ", KEYS[:3], lambda k: pool.submit(lambda: [k]), 2)

    def refuse(k):
        raise AssertionError(f"{k} made again")
    assert once_each("test ", KEYS[:3], refuse, 2) == first == {k: [k] for k in KEYS[:3]}


def test_without_the_session_folder_every_key_is_made(monkeypatch):
    monkeypatch.delenv("KREG_TEST_PROOFS", raising=False)
    pool = ThreadPoolExecutor(max_workers=2)
    assert once_each("test ", KEYS[:2], lambda k: pool.submit(lambda: k * 2), 2) == {"k0": "k0k0", "k1": "k1k1"}
