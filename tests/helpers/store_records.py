"""Results stores made by hand: a proof and a verdict recorded for a variant as `kreg verify` would
record them, on a named device kind."""
from kreg.registry.results import PROPS

CPU = "cpu (kreg PTX emulator)"
GPU = "gpu (NVIDIA H100 80GB HBM3, driver 13000)"


def verified(store, e, verdict, device_kind=CPU, checker="prover-test", proofs="proven", scope="all-dims",
              numerics="pass", median_us=None, ptx=None, cases=None):
    ptx = ptx or "p-" + e.hash[:8]
    store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version=checker, stage="proof", op=e.op, name=e.name,
              tool_version="t", payload={"proofs": dict.fromkeys(PROPS, proofs), "scopes": dict.fromkeys(PROPS, scope)})
    speed = {"median_us": median_us} if median_us else None
    if cases:
        speed["cases"] = {n: {"median_us": t} for n, t in cases.items()}
    store.put(variant_hash=e.hash, ptx_sha256=ptx, checker_version=checker, device_kind=device_kind, stage="verdict",
              op=e.op, name=e.name, tool_version="t",
              payload={"verdict": verdict, "numerics": numerics, "speed": speed})
