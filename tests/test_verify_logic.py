"""The verdict rule and the speed ratios, on hand-made results."""
from kreg.conformance.speed import add_ratios
from kreg.pipeline import PROPS, failed, verdict


def _res(safety, numerics, proofs="proven"):
    return {"safety": safety, "numerics": numerics, "proofs": {p: proofs for p in PROPS}, "reasons": [],
            "speed": None, "verdict": None}


def test_verdict_rule():
    assert verdict(_res("safe", "pass")) == "safe"
    r = _res("safe", "pass")
    r["proofs"]["race_free"] = "unknown"
    assert verdict(r) == "rejected" and "not proven: race_free" in r["reasons"][-1]
    assert verdict(_res("safe", "fail")) == "rejected"
    assert verdict(_res("unsafe", "pass", proofs="unknown")) == "unsafe"
    r = _res("unsafe", "pass")                    # an unsafe variant may leave properties open, never break one
    r["proofs"]["read_only"] = "refuted"
    assert verdict(r) == "rejected" and "read_only refuted" in r["reasons"][-1]
    r = _res("safe", "pass")
    r["environment_error"] = "no GPU"
    assert verdict(r) == "error"
    assert verdict(_res("unsafe", "fail")) == "rejected"
    r = _res("unsafe", "not-run")
    assert verdict(r) == "rejected" and "numerics did not run" in r["reasons"][-1]


def test_above_roofline_fails_the_run():
    r = _res("unsafe", "pass")
    r["verdict"] = verdict(r)
    assert not failed(r)
    r["speed"] = {"above_roofline": True}
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
