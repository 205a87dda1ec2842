"""One way to run untrusted or runaway work: a function in a child process with a wall-clock limit and
a memory limit, whose outcome (value, error, timeout, death) always comes back as data. Shared by the
verify/submit pipeline and the prover. Children never nest: called inside such a child, the function
runs in place (the enclosing child's limits already hold). A child dies with its parent."""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import resource
import select
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

_CHILD_ENV = "KREG_ISOLATED_CHILD"
POLL_S = 0.1
_cancel = threading.Event()


def cancel_all() -> None:
    """Kill every running child and refuse new ones (Ctrl-C): their outcomes are "interrupted"."""
    _cancel.set()


@dataclass
class Outcome:
    status: str                  # "ok" | "error" | "timeout" | "memory" | "died" | "interrupted"
    value: Any = None
    error: str | None = None     # "Type: message" for "error"; a sentence for the others
    detail: str | None = None    # the child's traceback, for "error"
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Turn:
    """An exclusive turn shared by processes (the GPU while a variant is timed): made in the parent,
    passed to children, taken with `with turn:`. A child killed while holding it does not wedge the
    others: run() gives the turn back for it."""

    def __init__(self, wait_s: float = 900.0):
        ctx = mp.get_context("spawn")
        self._lock, self._holder, self.wait_s = ctx.Lock(), ctx.Value("i", 0, lock=False), wait_s
        _turns.append(self)

    def __enter__(self):
        if not self._lock.acquire(timeout=self.wait_s):
            raise TimeoutError(f"no turn on the shared device within {self.wait_s:g} s")
        self._holder.value = os.getpid()
        return self

    def __exit__(self, *exc):
        self._holder.value = 0
        self._lock.release()

    def recover(self, pid: int) -> None:
        if self._holder.value == pid:
            self._holder.value = 0
            self._lock.release()


_turns: list[Turn] = []


_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def share_cores(jobs: int) -> int:
    """Before `jobs` children run at once: each child's BLAS pool gets cores / jobs threads (at least
    one), so parallel numerics do not oversubscribe the cores and starve a proof's clock guard. A
    thread count the user set is kept. Returns the count the children get."""
    per = max(1, (os.cpu_count() or 1) // max(1, jobs))
    for name in _BLAS_THREADS:
        os.environ.setdefault(name, str(per))
    return int(os.environ[_BLAS_THREADS[0]])


def in_child() -> bool:
    return os.environ.get(_CHILD_ENV) == str(os.getpid())


def mark_isolated() -> None:
    """Declare this process a child already (a pool worker the caller limits itself): run() then runs
    in place."""
    os.environ[_CHILD_ENV] = str(os.getpid())


def run(fn: Callable, *args, timeout_s: float, memory_mb: int | None = None, start: str = "spawn",
        address_limit: bool = False, preload: tuple[str, ...] = ()) -> Outcome:
    """fn(*args) in a child. timeout_s: wall-clock limit. memory_mb: the child is killed when its resident
    memory exceeds this (polled); with address_limit instead its address space is capped at what it maps
    at start plus memory_mb, so allocations fail with MemoryError (for forked children, whose resident
    size counts the parent's pages; not for CUDA processes, whose driver reserves far more address space
    than it uses). start: "spawn" (safe with threads and CUDA), "forkserver" (a fresh interpreter too, started
    once per process, that imports the `preload` modules of its first start and forks each child from that state:
    no interpreter start or imports per child) or "fork" (fast; only from a process without CUDA). Inside a child already, fn runs here."""
    t0 = time.monotonic()
    if _cancel.is_set():
        return Outcome("interrupted", error="interrupted (Ctrl-C) before it started")
    if in_child():
        try:
            return Outcome("ok", fn(*args), seconds=time.monotonic() - t0)
        except Exception as e:
            return Outcome("error", None, *_describe(e), seconds=time.monotonic() - t0)
    ctx = mp.get_context(start if start in mp.get_all_start_methods() else "spawn")
    # a spawned child (and the fork server) hashes strings with a fixed seed, so the prover's set iterations,
    # and with them z3's problems, are the same on every run
    os.environ.setdefault("PYTHONHASHSEED", "0")
    forkserver = ctx.get_start_method() == "forkserver"
    if forkserver and preload:
        ctx.set_forkserver_preload(list(preload))
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, args, send, os.getpid(), forkserver,
                                            memory_mb if address_limit else None))
    proc.start()
    send.close()
    out = None
    try:
        while out is None:
            left = timeout_s - (time.monotonic() - t0)
            if _cancel.is_set():
                out = Outcome("interrupted", error="interrupted (Ctrl-C); the child process was killed")
            elif left <= 0:
                out = Outcome("timeout", error=f"exceeded its time limit of {timeout_s:g} s and was killed")
            elif recv.poll(min(POLL_S, left)):
                try:
                    status, payload = recv.recv()
                except (EOFError, OSError):
                    out = _death(proc, memory_mb)
                else:
                    out = Outcome("ok", payload) if status == "ok" else Outcome("error", *payload)
            elif not proc.is_alive() and not recv.poll(0):
                out = _death(proc, memory_mb)
            elif memory_mb is not None and not address_limit and _rss_mb(proc.pid) > memory_mb:
                out = Outcome("memory", error=f"exceeded its memory limit of {memory_mb} MB and was killed")
    except KeyboardInterrupt:
        out = Outcome("interrupted", error="interrupted (Ctrl-C); the child process was killed")
        raise
    finally:
        recv.close()
        _reap(proc)
        if out is not None:
            out.seconds = time.monotonic() - t0
    return out


def _death(proc, memory_mb) -> Outcome:
    proc.join(1)
    code = proc.exitcode
    if code is not None and code < 0:
        why = f"killed by signal {signal.Signals(-code).name}"
    else:
        why = f"exit code {code}"
    hint = f"; over its memory limit of {memory_mb} MB?" if memory_mb else ""
    return Outcome("died", error=f"the child process died ({why}): a crash or memory corruption{hint}")


def _reap(proc) -> None:
    if proc.is_alive():
        proc.kill()
    proc.join(5)
    for turn in _turns:              # a turn the killed child held is given back
        turn.recover(proc.pid)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when its parent thread dies, so no child outlives a killed verify."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:                      # the parent died before prctl took effect
        os._exit(1)


def _die_with_caller(caller: int) -> None:
    """A fork server's child (its parent is the server, which lives as long as any of its children): end the
    moment the process that asked for it ends, watched by a thread that waits on the caller's pidfd (or polls)."""
    def watch():
        try:
            select.select([os.pidfd_open(caller)], [], [])
        except (AttributeError, OSError):           # no pidfd here, or the caller is gone already
            while True:
                try:
                    os.kill(caller, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(1.0)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _cap_address_space(memory_mb: int) -> None:
    with open("/proc/self/statm") as f:
        lim = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + (memory_mb << 20)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > lim:
        resource.setrlimit(resource.RLIMIT_AS, (lim, hard))


def _child(fn, args, conn, caller: int, forked_by_server: bool, address_mb: int | None) -> None:
    mark_isolated()
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the parent's to handle
    if forked_by_server:
        _die_with_caller(caller)
    else:
        _die_with_parent(caller)
    try:
        if address_mb:
            _cap_address_space(address_mb)
        msg = ("ok", fn(*args))
    except BaseException as e:                      # MemoryError included: report, never raise across
        msg = ("error", (None, *_describe(e)))
    try:
        conn.send(msg)
    except Exception as e:                          # an unpicklable result is an error too
        conn.send(("error", (None, "result not transferable: " + _describe(e)[0], None)))
    finally:
        conn.close()
        os._exit(0)


def _describe(e: BaseException) -> tuple[str, str]:
    return f"{type(e).__name__}: {e}", "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-4))
