"""The one trust rule (VariantReport.decide) and the typed store readers (registry/trust.py): what makes a
variant safe, how a stored proof is read, and the device kind parsed once."""
import pytest

from kreg.registry.catalog import load_catalog
from kreg.registry.device_kind import DeviceKind
from kreg.registry.results import PROPS, PropertyVerdict, Status, VariantReport, proof_payload, proofs_of
from kreg.registry.store import Store
from kreg.registry import trust


def _report(safety="safe", numerics="pass", status=Status.PROVEN, scope="all-dims", **kw):
    r = VariantReport("add", "v", safety, "h", {"T": "bf16"}, numerics=numerics, **kw)
    r.proofs = {p: PropertyVerdict(status, scope if status is Status.PROVEN else None) for p in PROPS}
    return r


def test_safe_needs_all_four_proven_for_all_dims_and_numerics_passing():
    assert _report().decide().verdict == "safe"
    assert _report(scope="cases:qwen3-4b").decide().verdict == "rejected"          # registered safe, not proven
    assert _report(scope="cases:qwen3-4b").decide(earned=True).verdict == "unsafe"  # a submission earns its class
    assert _report(numerics="fail").decide().verdict == "rejected"
    assert _report(safety="unsafe").decide().verdict == "unsafe"                    # registered unsafe stays so
    assert _report(safety="unsafe").decide(earned=True).verdict == "safe"           # a submission proven is safe
    no_checker = VariantReport("add", "v", "safe", "h", {}, numerics="pass")
    assert no_checker.decide().unproven == PROPS and no_checker.decide(earned=True).verdict == "unsafe"


def test_one_refutation_rejects_whatever_the_class():
    for safety in ("safe", "unsafe"):
        r = _report(safety=safety)
        r.proofs["race_free"] = PropertyVerdict(Status.REFUTED, reason="two writers")
        d = r.decide()
        assert d.verdict == "rejected" and d.refuted == ("race_free",) and "race_free" in d.unproven
        assert r.decide(earned=True).verdict == "rejected"


def test_environment_and_interruption_are_never_a_verdict():
    assert _report(environment_error="no GPU").decide().verdict == "error"
    d = _report(interrupted=True).decide(earned=True)
    assert d.verdict == "error" and d.undecided == "interrupted"


def test_a_speed_above_the_roofline_rejects_a_submission_only():
    r = _report(speed={"above_roofline": True})
    assert r.decide().verdict == "safe" and r.decide(earned=True).verdict == "rejected"


def test_vendor_routines_are_at_most_unverified():
    assert _report(safety="vendor", status=Status.UNKNOWN).decide().verdict == "unverified"


def test_status_equals_its_json_name_and_a_misspelt_one_is_refused():
    assert Status.PROVEN == "proven" and Status.REFUTED != "proven" and not (Status.UNKNOWN != "unknown")
    assert Status.PROVEN == 2 and min(Status) is Status.REFUTED
    v = PropertyVerdict("refuted")
    assert v.status is Status.REFUTED
    v.status = "unknown"
    assert v.status is Status.UNKNOWN
    with pytest.raises(ValueError):
        PropertyVerdict("proved")
    assert "assumptions" not in PropertyVerdict(Status.PROVEN, "all-dims", assumptions="x").to_json()


def test_a_stored_proof_is_never_read_as_more_than_its_summary_and_details_say():
    proofs = {p: PropertyVerdict(Status.PROVEN, "all-dims") for p in PROPS}
    payload = proof_payload(proofs)
    assert all(v.proven_for_all_dims for v in proofs_of(payload).values())
    payload["proofs"]["race_free"] = "unknown"                     # the summary says less: unknown
    assert not proofs_of(payload)["race_free"].proven_for_all_dims
    payload = proof_payload(proofs)
    payload["scopes"]["in_bounds"] = "cases:a"                     # a per-case scope: not for all dims
    assert proofs_of(payload)["in_bounds"].status is Status.UNKNOWN
    summary_only = {"proofs": dict.fromkeys(PROPS, "proven")}      # an old row: the summary alone
    assert all(v.decided for v in proofs_of(summary_only).values())


def test_device_kind_round_trips_the_stored_text():
    for text in ("cpu (kreg PTX emulator emu-3)", "gpu (NVIDIA H100 80GB HBM3, driver 13000)", "gpu", ""):
        assert str(DeviceKind.parse(text)) == text
    k = DeviceKind.parse("gpu (NVIDIA H100 80GB HBM3, driver 13000)")
    assert k == DeviceKind.gpu("NVIDIA H100 80GB HBM3", 13000) and k.serves("gpu") and not k.serves("cpu")
    assert k.detail == "NVIDIA H100 80GB HBM3, driver 13000"
    assert str(DeviceKind.cpu("emu-3")) == "cpu (kreg PTX emulator emu-3)"


def test_typed_readers_and_why_not_safe(tmp_path):
    cat = load_catalog()
    e = next(e for e in cat.entries if e.name == "add_bf16_safe")
    store = Store(tmp_path / "r.sqlite")
    kind = "cpu (kreg PTX emulator emu-3)"
    r = _report()
    store.put(variant_hash=e.hash, ptx_sha256="p1", checker_version="c1", stage="proof", op=e.op, name=e.name,
              tool_version="t", payload=proof_payload(r.proofs))
    store.put(variant_hash=e.hash, ptx_sha256="p1", checker_version="c1", device_kind=kind, stage="verdict",
              op=e.op, name=e.name, tool_version="t", payload={"verdict": "safe", "numerics": "pass"})
    got = trust.verdict(store, e.hash, device="cpu")
    assert got.device_kind == DeviceKind.parse(kind) and got.report.numerics == "pass"
    assert trust.verdict(store, e.hash, device="gpu") is None
    proofs = trust.proof(store, e.hash, "p1", "c1")
    assert trust.decided_proof(store, e.hash, "p1", "c1") == proofs
    assert trust.why_not_safe(e, got, "c1", proofs) is None
    assert "no proof by the current checker c2" in trust.why_not_safe(e, got, "c2", trust.proof(store, e.hash, "p1", "c2"))
    open_ = dict(proofs, barrier_safe=PropertyVerdict(Status.UNKNOWN, reason="timeout"))
    assert trust.why_not_safe(e, got, "c1", open_) == "not proven for all dims: barrier_safe"
    assert trust.decided_proof(store, e.hash, "p2", "c1") is None
