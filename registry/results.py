"""The typed results every layer shares: the four properties (their one definition), an ordered proof
status, a verdict per property with its scope, and the variant report whose to_json() is the one place
the documented JSON schema of `kreg verify --json` lives (stable field names: add, never rename)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import IntEnum

PROPS = ("read_only", "in_bounds", "race_free", "barrier_safe")
ALL_DIMS = "all-dims"


class Status(IntEnum):
    """Ordered so that combining verdicts (launches of a variant, queries of a property) is min():
    one refutation refutes, an unknown keeps a proof from closing."""
    REFUTED = 0
    UNKNOWN = 1
    PROVEN = 2

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, text: str | None) -> "Status":
        return {"proven": cls.PROVEN, "refuted": cls.REFUTED}.get(text or "", cls.UNKNOWN)


@dataclass
class PropertyVerdict:
    """The checker's verdict on one property: proven (for `scope`: all dims in range, or only the named
    cases), refuted (with a witness), or unknown (with the reason)."""
    status: Status
    scope: str | None = None              # "all-dims" | "cases:<names>" | None
    reason: str | None = None
    witness: dict | None = None
    replay: str | None = None             # the emulator replay of the witness: confirmed | not-confirmed | not-run
    ptx_sha256: str = ""
    checker_version: str = ""

    @property
    def proven_for_all_dims(self) -> bool:
        return self.status is Status.PROVEN and self.scope == ALL_DIMS

    @property
    def shown(self) -> str:
        """What the JSON's `proofs` shows: `proven` only for all dims (a per-case proof is `unknown`
        there; its scope is in `proof_scopes`)."""
        return "unknown" if self.status is Status.PROVEN and not self.proven_for_all_dims else str(self.status)

    @classmethod
    def from_json(cls, d: dict) -> "PropertyVerdict":
        keys = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in keys} | {"status": Status.of(d.get("status"))})

    def to_json(self) -> dict:
        return asdict(self) | {"status": str(self.status)}


@dataclass
class VariantReport:
    """One variant through the pipeline on one device."""
    op: str
    name: str
    safety: str
    hash: str
    types: dict
    proofs: dict[str, PropertyVerdict] | None = None     # None: the checker did not run
    numerics: str = "not-run"                            # pass | fail | not-run
    speed: dict | None = None
    verdict: str = "rejected"                            # safe | unsafe | rejected | error
    reasons: list[str] = field(default_factory=list)
    ptx_sha256: str | None = None
    device_detail: str | None = None
    cases_run: list[str] = field(default_factory=list)
    numerics_detail: list[dict] = field(default_factory=list)
    complete: bool = False                 # every stage decided: worth storing
    environment_error: str | None = None   # the machine kept a stage from running
    interrupted: bool = False
    proof_reused: bool = False             # the proofs came from the store (the same PTX, the current checker)
    proof_work: dict = field(default_factory=dict)   # the prover's solver work (checker/prover/solving.py WorkLog)
    seconds: dict[str, float] = field(default_factory=dict)   # wall time of each stage that ran
    preconditions: dict | None = None      # the precondition search (checker/prover/preconditions.py Search.to_json)

    def status(self, prop: str) -> str:
        return self.proofs[prop].shown if self.proofs else "unknown"

    @property
    def checker_version(self) -> str:
        return next((v.checker_version for v in (self.proofs or {}).values() if v.checker_version), "")

    def to_json(self) -> dict:
        out = {"op": self.op, "name": self.name, "safety": self.safety, "hash": self.hash, "types": self.types,
               "proofs": {p: self.status(p) for p in PROPS}, "numerics": self.numerics, "speed": self.speed,
               "verdict": self.verdict, "reasons": self.reasons, "complete": self.complete,
               "stage_seconds": self.seconds}
        if self.proofs:
            out["proof_scopes"] = {p: v.scope for p, v in self.proofs.items()}
            out["proof_details"] = {p: v.to_json() for p, v in self.proofs.items()}
            out["checker_version"] = self.checker_version
        for k in ("ptx_sha256", "device_detail", "environment_error"):
            if getattr(self, k):
                out[k] = getattr(self, k)
        if self.cases_run:
            out["cases_run"], out["numerics_detail"] = self.cases_run, self.numerics_detail
        if self.interrupted:
            out["interrupted"] = True
        if self.proof_reused:
            out["proof_reused"] = True
        if self.proof_work:
            out["proof_work"] = self.proof_work
        if self.preconditions is not None:
            out["preconditions"] = self.preconditions
        return out

    @classmethod
    def from_json(cls, d: dict) -> "VariantReport":
        """The report back from its to_json() (a stored verdict row's payload)."""
        details = d.get("proof_details")
        return cls(d["op"], d["name"], d["safety"], d["hash"], dict(d.get("types") or {}),
                   proofs={p: PropertyVerdict.from_json(details[p]) for p in PROPS} if details else None,
                   numerics=d.get("numerics", "not-run"), speed=d.get("speed"), verdict=d.get("verdict", "rejected"),
                   reasons=list(d.get("reasons") or []), ptx_sha256=d.get("ptx_sha256"),
                   device_detail=d.get("device_detail"), cases_run=list(d.get("cases_run") or []),
                   numerics_detail=list(d.get("numerics_detail") or []), complete=bool(d.get("complete")),
                   environment_error=d.get("environment_error"), interrupted=bool(d.get("interrupted")),
                   seconds=dict(d.get("stage_seconds") or {}), proof_work=dict(d.get("proof_work") or {}),
                   preconditions=d.get("preconditions"))
