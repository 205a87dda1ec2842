"""Lock files: the exact artifacts a profile resolved, pinned for review and reuse (`kreg lock`).

A lock is plain JSON (sorted keys, one field per line: diffable and reviewable), format 1:

    {"kreg_lock": 1, "profile": "safe-only", "device": "cpu", "checker_version": "prover-0.13",
     "entries": [{"op": "rms_norm", "types": {"DT": "bf16"}, "variant": "rms_norm_bf16_safe",
                  "variant_hash": "...", "ptx_sha256": "...", "checker_version": "prover-0.13",
                  "device_kind": "cpu (kreg PTX emulator 0.x)", "verdict": "safe", "numerics": "pass",
                  "proofs": {"read_only": "proven", ...}, "scopes": {"read_only": "all-dims", ...},
                  "case": null, "dims": null}, ...]}

One entry per op and type binding (`case`/`dims` null), plus one per named case where the profile runs
another variant at exactly that case's dims. `check` holds a lock against the registry and the results
store: an entry is refused unless the catalog still has a variant of that content hash, the store holds
that verdict for that PTX on that device kind and that checker's proof of that PTX with those very
proofs, and the checker running now is the lock's. Under a safe-only lock every entry must also be safe
by the profile's own rule (registry/profiles.py)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .catalog import Catalog
from .profiles import Resolution, why_not_safe
from .store import Store

FORMAT = 1


class LockError(ValueError):
    """A lock file that cannot be read, or whose entries the registry and store do not back."""


@dataclass(frozen=True)
class LockEntry:
    op: str
    types: dict
    variant: str
    variant_hash: str
    ptx_sha256: str
    checker_version: str
    device_kind: str
    verdict: str
    numerics: str
    proofs: dict
    scopes: dict
    case: str | None = None               # a named case where this variant runs instead of the default
    dims: dict | None = None              # that case's dims

    @property
    def key(self) -> tuple:
        return self.op, tuple(sorted(self.types.items())), self.case


@dataclass
class Lock:
    profile: str
    device: str                           # "cpu" | "gpu"
    checker_version: str
    entries: list[LockEntry] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kreg_lock": FORMAT, "profile": self.profile, "device": self.device,
                "checker_version": self.checker_version, "entries": [asdict(e) for e in self.entries]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"

    def write(self, path: str | Path) -> None:
        Path(path).write_text(self.dumps())

    def defaults(self, op: str, types: dict) -> LockEntry | None:
        """The entry an op and type binding runs by default (None: the lock has none)."""
        key = (op, tuple(sorted(types.items())), None)
        return next((e for e in self.entries if e.key == key), None)

    def by_case(self, op: str, types: dict) -> list[LockEntry]:
        k = (op, tuple(sorted(types.items())))
        return [e for e in self.entries if e.key[:2] == k and e.case is not None]


def _entry(store: Store, op: str, types: dict, variant: str, vhash: str, ptx: str, device: str,
           checker_version: str, case=None, dims=None) -> LockEntry:
    verdicts = [r for r in store.query(variant_hash=vhash, stage="verdict", ptx_sha256=ptx)
                if r["device_kind"].split(" ")[0] == device]
    if not verdicts:
        raise LockError(f"{variant}: the store holds no verdict for PTX {ptx[:12]} on --device {device}")
    v = verdicts[-1]
    proof = store.latest(vhash, "proof", ptx_sha256=ptx, checker_version=checker_version)
    pp = (proof or {}).get("payload", {})
    return LockEntry(op, dict(types), variant, vhash, ptx, checker_version, v["device_kind"],
                     v["payload"].get("verdict", "?"), v["payload"].get("numerics", "?"),
                     dict(pp.get("proofs") or {}), dict(pp.get("scopes") or {}), case, dict(dims) if dims else None)


def make(res: Resolution, store: Store, ops=None, dtypes=None) -> tuple[Lock, list]:
    """The lock of a resolved profile (only `ops` / type bindings of `dtypes` where given) and the
    choices among those that have no qualifying variant."""
    lock, missing = Lock(res.profile, res.device, res.checker_version), []
    for c in res.choices:
        if (ops and c.op not in ops) or (dtypes and c.types and not set(c.types.values()) <= set(dtypes)):
            continue
        if c.variant is None:
            missing.append(c)
            continue
        lock.entries.append(_entry(store, c.op, c.types, c.variant, c.hash, c.ptx_sha256, res.device,
                                   res.checker_version))
        for case, cc in sorted(c.by_case.items()):
            lock.entries.append(_entry(store, c.op, c.types, cc.variant, cc.hash, cc.ptx_sha256, res.device,
                                       res.checker_version, case, cc.dims))
    return lock, missing


def read(path: str | Path) -> Lock:
    """A lock file as written by `kreg lock`; a LockError for anything else."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise LockError(f"cannot read the lock file {path}: {e}") from None
    if not isinstance(data, dict) or data.get("kreg_lock") != FORMAT:
        raise LockError(f"{path} is not a kreg lock file of format {FORMAT} (written by `kreg lock`)")
    try:
        entries = [LockEntry(**e) for e in data["entries"]]
        lock = Lock(str(data["profile"]), str(data["device"]), str(data["checker_version"]), entries)
    except (KeyError, TypeError) as e:
        raise LockError(f"{path}: malformed lock file ({type(e).__name__}: {e})") from None
    keys = [e.key for e in entries]
    if len(set(keys)) != len(keys):
        raise LockError(f"{path}: an op and type binding is locked twice")
    return lock


def check(lock: Lock, catalog: Catalog, store: Store, checker_version: str, device_kind: str | None = None,
          entries=None) -> None:
    """A LockError naming the first entry the registry and the store do not back exactly (see the
    module docstring); `device_kind`: the device that will run them (its verdicts must be this kind's)."""
    if lock.checker_version != checker_version:
        raise LockError(f"the lock was made with checker {lock.checker_version}; this kreg's checker is "
                        f"{checker_version}: its proofs are not current (run `kreg verify` and `kreg lock` again)")
    by_hash = {e.hash: e for e in catalog.entries}
    for le in entries if entries is not None else lock.entries:
        where = f"lock entry {le.op} {','.join(le.types.values()) or '-'}{' at ' + le.case if le.case else ''} ({le.variant})"
        e = by_hash.get(le.variant_hash)
        if e is None:
            raise LockError(f"{where}: no variant of content hash {le.variant_hash[:12]} in the registry (its "
                            "source or metadata changed since the lock was made)")
        if e.op != le.op or e.name != le.variant or e.variant.types != le.types:
            raise LockError(f"{where}: the registry's variant {e.hash[:12]} is {e.op}/{e.name} {e.variant.types}")
        if le.checker_version != lock.checker_version:
            raise LockError(f"{where}: a proof of checker {le.checker_version}, not the lock's {lock.checker_version}")
        if device_kind is not None and le.device_kind != device_kind:
            raise LockError(f"{where}: verified on {le.device_kind}, not on this device ({device_kind})")
        rows = store.query(variant_hash=le.variant_hash, stage="verdict", ptx_sha256=le.ptx_sha256,
                           device_kind=le.device_kind)
        if not rows:
            raise LockError(f"{where}: the results store holds no verdict for PTX {le.ptx_sha256[:12]} on "
                            f"{le.device_kind} (run `kreg verify --device {lock.device} {le.variant}`)")
        v = rows[-1]["payload"]
        if (v.get("verdict"), v.get("numerics")) != (le.verdict, le.numerics):
            raise LockError(f"{where}: the store's verdict is {v.get('verdict')} (numerics {v.get('numerics')}), "
                            f"the lock says {le.verdict} (numerics {le.numerics})")
        proof = store.latest(le.variant_hash, "proof", ptx_sha256=le.ptx_sha256, checker_version=le.checker_version)
        pp = (proof or {}).get("payload", {})
        if proof is None or (pp.get("proofs") or {}) != le.proofs or (pp.get("scopes") or {}) != le.scopes:
            raise LockError(f"{where}: the store's proof by {le.checker_version} of PTX {le.ptx_sha256[:12]} is "
                            f"{(pp.get('proofs') or 'missing')}, not the lock's {le.proofs}")
        if lock.profile == "safe-only" and (why := why_not_safe(e, rows[-1], checker_version, proof)):
            raise LockError(f"{where}: not safe: {why}")
