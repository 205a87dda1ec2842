"""The verdict rule, the typed report's JSON and the speed ratios, on hand-made results."""
import pytest
from kreg.conformance.speed import add_ratios
from kreg.pipeline import failed, verdict
from kreg.registry.results import PROPS, PropertyVerdict, Status, VariantReport


def _res(safety, numerics, proofs="proven", scope="all-dims"):
    r = VariantReport("add", "v", safety, "h" * 64, {"T": "bf16"}, numerics=numerics)
    r.proofs = {p: PropertyVerdict(Status.of(proofs), scope if proofs == "proven" else None) for p in PROPS}
    return r


def test_verdict_rule():
    assert verdict(_res("safe", "pass")) == "safe"
    r = _res("safe", "pass")
    r.proofs["race_free"] = PropertyVerdict(Status.UNKNOWN, reason="timeout")
    assert verdict(r) == "rejected" and "not proven: race_free" in r.reasons[-1]
    assert verdict(_res("safe", "fail")) == "rejected"
    assert verdict(_res("unsafe", "pass", proofs="unknown")) == "unsafe"
    r = _res("unsafe", "pass")                    # an unsafe variant may leave properties open, never break one
    r.proofs["read_only"] = PropertyVerdict(Status.REFUTED, reason="store to input x")
    assert verdict(r) == "rejected" and "read_only refuted" in r.reasons[-1]
    r = _res("safe", "pass")
    r.environment_error = "no GPU"
    assert verdict(r) == "error"
    assert verdict(_res("unsafe", "fail")) == "rejected"
    r = _res("unsafe", "not-run")
    assert verdict(r) == "rejected" and "numerics did not run" in r.reasons[-1]
    r = VariantReport("add", "v", "safe", "h", {}, numerics="pass")     # the checker did not run
    assert verdict(r) == "rejected" and r.status("read_only") == "unknown"


def test_per_case_proofs_never_make_a_variant_safe():
    r = _res("safe", "pass", scope="cases:qwen3-4b,qwen3-8b")
    assert verdict(r) == "rejected"
    j = r.to_json()
    assert j["proofs"] == dict.fromkeys(PROPS, "unknown")                # never shown as plain proven
    assert j["proof_scopes"] == dict.fromkeys(PROPS, "cases:qwen3-4b,qwen3-8b")


def test_report_json_keeps_the_documented_fields():
    j = _res("safe", "pass").to_json()
    assert {"op", "name", "safety", "hash", "proofs", "numerics", "speed", "verdict", "reasons"} <= set(j)
    assert j["proofs"] == dict.fromkeys(PROPS, "proven")
    assert PropertyVerdict.from_json(j["proof_details"]["in_bounds"]).proven_for_all_dims
    assert min(Status) is Status.REFUTED and Status.of("bogus") is Status.UNKNOWN


def test_above_roofline_fails_the_run():
    r = _res("unsafe", "pass")
    r.verdict = verdict(r)
    assert not failed(r)
    r.speed = {"above_roofline": True}
    assert failed(r)


def _timed(name, types, cases, above=()):
    return {"op": "add", "name": name, "types": types,
            "speed": {"cases": {c: {"median_us": t, "above_roofline": c in above} for c, t in cases.items()}}}


def test_ratios_to_the_fastest_of_the_same_op_and_types():
    rs = [_timed("a", {"T": "bf16"}, {"big": 10.0, "small": 2.0}),
          _timed("b", {"T": "bf16"}, {"big": 8.0, "small": 3.0}),
          _timed("c", {"T": "f16"}, {"big": 1.0}),
          _timed("d", {"T": "bf16"}, {"big": 0.5}, above=("big",))]
    add_ratios(rs)
    assert rs[0]["speed"]["ratio_to_fastest"] == {"big": 10.0 / 8.0, "small": 1.0}
    assert rs[1]["speed"]["ratio_to_fastest"] == {"big": 1.0, "small": 1.5}
    assert rs[2]["speed"]["ratio_to_fastest"] == {"big": 1.0}           # other dtype: its own group
    assert rs[3]["speed"]["ratio_to_fastest"]["big"] == 0.5 / 8.0        # a flagged figure is no one's yardstick


def test_the_roofline_is_the_dram_peak_where_the_device_reports_it_else_the_copy_with_slack():
    from types import SimpleNamespace
    from kreg.conformance.speed import roofline
    copy = 3.0e12
    # an H100's HBM3: 2619 MHz x 5120 bits x 2 / 8 = 3.35 TB/s; a read-only stream at 106% of copy is below it
    h100 = SimpleNamespace(peak_bytes_per_s=2.0 * 2619e6 * 5120 / 8)
    assert 1.06 * copy < roofline(h100, copy) < 1.13 * copy
    assert roofline(SimpleNamespace(peak_bytes_per_s=None), copy) == pytest.approx(1.05 * copy)
    assert roofline(SimpleNamespace(), copy) == pytest.approx(1.05 * copy)
