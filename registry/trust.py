"""The store read as typed results, and whether a stored variant is trusted: a proof row as its four
PropertyVerdicts, a verdict row as the VariantReport it was stored from (with the device kind it ran on),
and why_not_safe(), which decides a stored verdict again with the current checker's proofs of its PTX by
the one trust rule (VariantReport.decide). Profiles, lock files, the engine's plan, kreg.torch, verify's
proof reuse and submit read the store through these."""
from __future__ import annotations

from dataclasses import dataclass, replace

from .catalog import Entry
from .device_kind import DeviceKind
from .results import PropertyVerdict, VariantReport, proofs_of
from .store import Store


@dataclass(frozen=True)
class StoredVerdict:
    """A verdict row: the report as stored and the key it was stored under."""
    report: VariantReport
    variant_hash: str
    ptx_sha256: str
    checker_version: str
    device_kind: DeviceKind

    @classmethod
    def of_row(cls, row: dict) -> StoredVerdict:
        known = {"op": row["op"], "name": row["name"], "hash": row["variant_hash"], "safety": ""}
        return cls(VariantReport.from_json(known | row["payload"]), row["variant_hash"], row["ptx_sha256"],
                   row["checker_version"], DeviceKind.parse(row["device_kind"]))


def proof(store: Store, variant_hash: str, ptx_sha256: str, checker_version: str) -> dict[str, PropertyVerdict] | None:
    """The four verdicts of the stored proof of this PTX by that checker (None: no such proof)."""
    row = store.latest(variant_hash, "proof", ptx_sha256=ptx_sha256, checker_version=checker_version)
    return proofs_of(row["payload"]) if row else None


def decided_proof(store: Store, variant_hash: str, ptx_sha256: str,
                  checker_version: str) -> dict[str, PropertyVerdict] | None:
    """The stored proof if all four properties are decided (refuted, or proven for all dims): one that
    proving again could not improve, so `kreg verify` reuses it."""
    got = proof(store, variant_hash, ptx_sha256, checker_version)
    return got if got and all(v.decided for v in got.values()) else None


def verdicts(store: Store, variant_hash: str, *, ptx_sha256: str | None = None, device: str | None = None,
             device_kind: DeviceKind | str | None = None, checker_version: str | None = None) -> list[StoredVerdict]:
    """The variant's verdict rows, oldest first: of that PTX, that checker, that exact device kind, or any
    kind serving `device` (cpu / gpu), where given."""
    where = {k: str(x) for k, x in (("ptx_sha256", ptx_sha256), ("device_kind", device_kind),
                                     ("checker_version", checker_version)) if x is not None}
    rows = [StoredVerdict.of_row(r) for r in store.query(variant_hash=variant_hash, stage="verdict", **where)]
    return [r for r in rows if device is None or r.device_kind.serves(device)]


def verdict(store: Store, variant_hash: str, **where) -> StoredVerdict | None:
    """The newest verdict row of the variant (filters as verdicts())."""
    rows = verdicts(store, variant_hash, **where)
    return rows[-1] if rows else None


def latest_verdicts(store: Store, device: str) -> dict[str, StoredVerdict]:
    """The newest verdict of each variant hash on a device kind serving this device (cpu / gpu)."""
    out: dict[str, StoredVerdict] = {}
    for row in store.query(stage="verdict"):           # oldest first
        if DeviceKind.parse(row["device_kind"]).serves(device):
            out[row["variant_hash"]] = StoredVerdict.of_row(row)
    return out


def why_not_safe(e: Entry, stored: StoredVerdict | None, checker_version: str,
                 proofs: dict[str, PropertyVerdict] | None) -> str | None:
    """None if the variant is safe on this device kind: its stored verdict (numerics belong to the PTX and
    the device) decided again with `proofs`, the current checker's proof of that PTX, is `safe`; else why
    not."""
    if e.variant.safety != "safe":
        return {"vendor": f"a {e.variant.library} routine, never proven (the profile admits no vendor library)"}.get(
            e.variant.safety, f"an {e.variant.safety} variant (the profile admits only safe ones)")
    if stored is None:
        return "no complete verify result on this device kind for this exact variant (run `kreg verify`)"
    r = stored.report
    if r.numerics != "pass":
        return f"numerics {r.numerics} on {stored.device_kind}"
    if proofs is None:       # numerics belong to the PTX and the device, proofs to the PTX and the checker
        return (f"no proof by the current checker {checker_version} for its PTX {stored.ptx_sha256[:12]} (its "
                f"verify ran with {stored.checker_version or '?'}; `kreg verify` proves it, on any device)")
    d = replace(r.with_proofs(proofs), safety=e.variant.safety).decide()   # the class is the entry's (its hash)
    if d.verdict == "safe":
        return None
    if d.unproven:
        return "not proven for all dims: " + ", ".join(d.unproven)
    return f"decided {d.verdict} ({d.undecided or 'see its verify result'})"
