"""Which variant serves each call: resolved once per op, type binding and device kind from the profile
in use (`safe-only` by default) or from a lock file, through engine/plan.py (the engine's own resolver
and loader: the exact PTX the store names, its sha256 checked). No fallback: an op without a qualifying
variant raises NoVariantError with the op, why and the command to run. The first use of each logs the
variant, PTX sha256, checker version and verdict (logger `kreg.torch`); explain() lists them all."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from kreg import runtime
from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.engine import plan as P
from kreg.engine.errors import EngineError
from kreg.registry.catalog import load_catalog
from kreg.registry.lockfile import Lock, LockError, check, read
from kreg.registry.profiles import PROFILES
from kreg.registry.store import Store, StoreError

from .errors import NoVariantError

log = logging.getLogger("kreg.torch")
CPU_MAX_COST = 200_000_000      # the emulator's step budget per launch, as the engine's


@dataclass
class Source:
    profile: str = "safe-only"
    lock: Lock | None = None
    lock_path: str | None = None

    def describe(self) -> str:
        return f"lock file {self.lock_path} ({self.lock.profile})" if self.lock else f"profile {self.profile}"


_source = Source()
_kernels: dict[tuple, P.OpKernel] = {}
_explained: dict[tuple, dict] = {}
_devices: dict[str, runtime.Device] = {}
_lock = threading.Lock()


def device(kind: str) -> runtime.Device:
    """The runtime device variants are resolved and loaded on ("cpu": an emulator whose modules give
    each call its PTX; "gpu": the current CUDA GPU)."""
    if kind not in _devices:
        try:
            _devices[kind] = runtime.device(kind, **({"max_cost": CPU_MAX_COST} if kind == "cpu" else {}))
        except Exception as e:
            raise NoVariantError(f"kreg.torch cannot open the {kind} device: {type(e).__name__}: {e} "
                                 "(a CUDA tensor needs CuPy: pip install 'kreg[gpu]')") from None
    return _devices[kind]


def use_profile(profile: str = "safe-only") -> None:
    """Resolve every later call from this profile (safe-only or fastest) and the results store."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (profiles: {', '.join(PROFILES)})")
    _set(Source(profile))


def use_lock(path) -> Lock:
    """Run exactly the variants a lock file (`kreg lock`) pins, and nothing else: every entry is held
    against the registry and the results store now (NoVariantError naming the entry refused), and an op
    the lock does not name is refused when called."""
    try:
        lock = read(path)
        kind = device(lock.device).describe()
        check(lock, load_catalog(), Store(), CHECKER_VERSION, kind)
    except (LockError, StoreError) as e:
        raise NoVariantError(f"kreg.torch.use_lock({str(path)!r}) refused: {e}") from None
    _set(Source(lock.profile, lock, str(path)))
    return lock


def _set(src: Source) -> None:
    global _source
    with _lock:
        _source = src
        _kernels.clear()
        _explained.clear()


def _not_ptx(e) -> str | None:
    if e.variant.vendor:
        return f"a {e.variant.library} routine, not PTX: kreg.torch launches only the PTX that was verified"
    return None


def kernel(op: str, types: dict, kind: str) -> P.OpKernel:
    """The loaded variant serving an op for this type binding on this device kind ("cpu" | "gpu")."""
    key = (op, tuple(sorted(types.items())), kind)
    k = _kernels.get(key)
    if k is not None:
        return k
    with _lock:
        if (k := _kernels.get(key)) is None:
            k = _kernels[key] = _resolve(op, types, kind)
            _explained[key] = info = _explain(op, types, k)
            log.info("kreg.torch %s %s on %s: %s (ptx %s, checker %s, verdict %s; %s)", op,
                     ",".join(types.values()) or "-", kind, info["variant"], info["ptx_sha256"],
                     info["checker_version"], info["verdict"], _source.describe())
    return k


def _resolve(op: str, types: dict, kind: str) -> P.OpKernel:
    dev, dtype = device(kind), next(iter(types.values()), None)
    src = _source
    try:
        if src.lock is not None:
            plan = P.from_lock(src.lock, dev, dtype, ops=(op,), optional=(), unusable=_not_ptx)
        else:
            plan = P.from_profile(src.profile, dev, dtype, ops=(op,), optional=(), unusable=_not_ptx)
    except EngineError as e:
        raise NoVariantError(f"kreg.torch {op} ({dtype or 'untyped'}, {kind}) under {src.describe()}: {e}") from None
    return plan[op]


def _explain(op: str, types: dict, k: P.OpKernel) -> dict:
    def one(kk: P.OpKernel) -> dict:
        store, sha = Store(), kk.module.sha256
        verdict = store.latest(kk.entry.hash, "verdict", ptx_sha256=sha, device_kind=kk.module.device.describe())
        proof = store.latest(kk.entry.hash, "proof", ptx_sha256=sha, checker_version=CHECKER_VERSION)
        return {"variant": kk.name, "safety": kk.entry.variant.safety, "hash": kk.entry.hash, "ptx_sha256": sha,
                "checker_version": CHECKER_VERSION if proof else None,
                "verdict": (verdict or {}).get("payload", {}).get("verdict"),
                "proofs": (proof or {}).get("payload", {}).get("proofs"), "why": kk.why}
    return {"op": op, "types": dict(types), "device": k.module.device.describe(), "source": _source.describe(),
            **one(k), "by_dims": [{"dims": dict(key), **one(kk)} for key, kk in sorted(k.by_dims.items())]}


def explain() -> list[dict]:
    """What served each op called so far: variant, content hash, PTX sha256, checker version, verdict,
    proofs, why it was chosen, and the variants that run instead at some exact dims."""
    with _lock:
        return [dict(v) for _, v in sorted(_explained.items())]
