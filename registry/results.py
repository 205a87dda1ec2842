"""The typed results every layer shares: the four properties (their one definition), an ordered proof
status, a verdict per property with its scope (what the prover returns and the store keeps), the variant
report whose to_json() is the one place the documented JSON schema of `kreg verify --json` lives (stable
field names: add, never rename), and the one trust rule, VariantReport.decide(): what makes a variant
safe, unsafe or rejected. Everything that admits a variant (verify, submit, profiles, lock files, the
engine, kreg.torch, the suite) reaches its answer through decide()."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
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

    # A status equals its JSON name, deliberately: `v.status == "proven"` reads as the JSON does and is
    # never silently False (an IntEnum would compare a str unequal to every member).
    def __eq__(self, other) -> bool:
        return str(self) == other if isinstance(other, str) else int.__eq__(self, other)

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = int.__hash__     # as a dict key a status is its int, never its name: key JSON by str(status)

    @classmethod
    def of(cls, text: str | None) -> "Status":
        """Lenient, for stored data: anything but `proven` / `refuted` is unknown."""
        return {"proven": cls.PROVEN, "refuted": cls.REFUTED}.get(text or "", cls.UNKNOWN)

    @classmethod
    def parse(cls, text: str) -> "Status":
        """Strict, for code: one of the three names, else ValueError."""
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"not a proof status: {text!r} (proven, refuted or unknown)") from None


@dataclass
class PropertyVerdict:
    """The checker's verdict on one property: proven (for `scope`: all dims in range, or only the named
    cases), refuted (with a witness), or unknown (with the reason). A status given as its name is taken
    as the Status (strictly: a misspelt name raises)."""
    status: Status
    scope: str | None = None              # "all-dims" | "cases:<names>" | None
    reason: str | None = None
    witness: dict | None = None
    replay: str | None = None             # the emulator replay of the witness: confirmed | not-confirmed | not-run
    ptx_sha256: str = ""
    checker_version: str = ""
    assumptions: str = ""                 # what the prover assumed (checker/prover/prove.py ASSUMPTIONS); not in the JSON

    def __setattr__(self, name, value):
        if name == "status" and not isinstance(value, Status):
            value = Status.parse(value)
        object.__setattr__(self, name, value)

    @property
    def proven_for_all_dims(self) -> bool:
        return self.status is Status.PROVEN and self.scope == ALL_DIMS

    @property
    def decided(self) -> bool:
        """Refuted, or proven for all dims: what a later proof's `unknown` never replaces, and what a
        stored proof must be on all four properties to be reused instead of proving again."""
        return self.status is Status.REFUTED or self.proven_for_all_dims

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
        out = asdict(self) | {"status": str(self.status)}
        del out["assumptions"]          # the checker version names them; the documented schema has no such field
        return out


@dataclass(frozen=True)
class Decision:
    """What VariantReport.decide() found: the verdict and the facts it rests on (each caller words them)."""
    verdict: str                          # safe | unsafe | unverified | rejected | error
    refuted: tuple[str, ...] = ()
    unproven: tuple[str, ...] = ()        # not proven for all dims: what keeps a variant from `safe`
    numerics: str = "not-run"
    above_roofline: bool = False
    undecided: str | None = None          # why the environment left it undecided (verdict `error`)


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
    proof_record: dict = field(default_factory=dict, repr=False)   # the proof's record (stored with it, not shown)
    seconds: dict[str, float] = field(default_factory=dict)   # wall time of each stage that ran
    preconditions: dict | None = None      # the precondition search (checker/prover/preconditions.py Search.to_json)

    def status(self, prop: str) -> str:
        return self.proofs[prop].shown if self.proofs else "unknown"

    def decide(self, earned: bool = False) -> Decision:
        """The one trust rule. `error` when the environment kept a stage from running (or the run was
        interrupted); else `rejected` if any property is refuted or numerics did not pass (and, `earned`,
        if a speed is above the roofline); `unverified` for a conformant vendor routine (no source,
        nothing proven); `safe` only with all four properties proven for all dims. Otherwise, as
        registered (`kreg verify`): a safe variant is `rejected`, an unsafe one `unsafe` (it may leave
        properties unknown, never break one). `earned` (`kreg submit`): the class is earned, never taken
        from the claim: `safe` if all four are proven for all dims, else `unsafe`."""
        facts = dict(refuted=tuple(p for p in PROPS if self.status(p) == "refuted"),
                     unproven=tuple(p for p in PROPS if not (self.proofs and self.proofs[p].proven_for_all_dims)),
                     numerics=self.numerics, above_roofline=bool((self.speed or {}).get("above_roofline")))
        if self.environment_error or self.interrupted:
            return Decision("error", undecided=self.environment_error or "interrupted", **facts)
        if facts["refuted"] or self.numerics != "pass" or (earned and facts["above_roofline"]):
            return Decision("rejected", **facts)
        if self.safety == "vendor":
            return Decision("unverified", **facts)
        if not facts["unproven"] and (earned or self.safety == "safe"):
            return Decision("safe", **facts)
        return Decision("unsafe" if earned or self.safety != "safe" else "rejected", **facts)

    def with_proofs(self, proofs: dict[str, PropertyVerdict] | None) -> "VariantReport":
        """The same report with other proofs of its PTX (a later checker's), to be decided again."""
        return replace(self, proofs=proofs, reasons=list(self.reasons))

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


def proof_payload(proofs: dict[str, PropertyVerdict]) -> dict:
    """A stored proof row's payload: what each property shows, its scope, and the verdicts in full."""
    return {"proofs": {p: v.shown for p, v in proofs.items()}, "scopes": {p: v.scope for p, v in proofs.items()},
            "details": {p: v.to_json() for p, v in proofs.items()}}


def proofs_of(payload: dict) -> dict[str, PropertyVerdict]:
    """The four verdicts of a stored proof row's payload. Where the summary (`proofs`, `scopes`) and the
    full verdict (`details`) of a property disagree on what it shows, it is unknown: a stored proof is
    never read as more than both of them say."""
    shown, scopes, details = (payload.get(k) or {} for k in ("proofs", "scopes", "details"))
    out = {}
    for p in PROPS:
        said = shown.get(p, "unknown")
        if details.get(p):
            v = PropertyVerdict.from_json(details[p])
        else:
            status = Status.of(said)
            v = PropertyVerdict(status, scopes.get(p, ALL_DIMS) if status is Status.PROVEN else scopes.get(p))
        if v.shown != said or (said == "proven" and scopes.get(p, ALL_DIMS) != ALL_DIMS):
            v = PropertyVerdict(Status.UNKNOWN, None, f"the stored proof's summary ({said}, scope {scopes.get(p)}) "
                                f"and verdict ({v.shown}, scope {v.scope}) disagree",
                                ptx_sha256=v.ptx_sha256, checker_version=v.checker_version)
        out[p] = v
    return out
