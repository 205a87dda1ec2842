"""Settling what the proof left open: each property still `unknown` is searched for a concrete violation
in the emulator at small shapes (checker/emulator/search.py); one found refutes it, with a witness the user
can replay (reason "bounded witness at dims ..."). Never turns anything into `proven`. What stays `unknown`
is told which of the kernel's constructs the prover does not model (checker/prover/unmodelled.py). The prover
knows no ordering but barriers: in a kernel that polls a flag (volatile / acquire loads) its race witness
may be ordered by the hand-off, so it stands only where the search's happens-before check shows a race."""
from __future__ import annotations

from kreg.checker.emulator.search import search
from kreg.checker.prover.unmodelled import polls_flags, unmodelled

ENABLED = True


def settle_unknowns(total: dict, variant, op, module, verdict_cls) -> None:
    """Refute, in place, the unknown verdicts of `total` that the bounded search shows violated; annotate
    the rest with what is not modelled."""
    if total.get("race_free") is not None and total["race_free"].status == "refuted" and polls_flags(module, variant) \
            and not (total["race_free"].witness or {}).get("bounded"):
        v = total["race_free"]
        v.status, v.reason = "unknown", f"possible race ({v.reason}), but the kernel orders threads by a flag"
    open_ = {p for p, v in total.items() if v.status == "unknown"}
    if not open_:
        return
    found, searched = {}, "not run"
    if ENABLED:
        try:
            found = search(variant, op, module, open_)
            searched = "no violation at the shapes searched"
        except Exception as e:          # a search problem never changes a verdict
            searched = f"bounded search failed: {type(e).__name__}: {e}"
    for p in sorted(open_):
        f = found.get(p)
        if f is not None:
            dims = ", ".join(f"{k}={v}" for k, v in f.witness["dims"].items())
            total[p] = verdict_cls("refuted", None, f"bounded witness at dims {dims} (inputs {f.witness['inputs']}, "
                                   f"launch {f.witness['launch']}): {f.what}; the prover's reason: {total[p].reason}",
                                   f.witness, "confirmed")
            continue
        why = unmodelled(module, variant)
        v = total[p]
        if why:
            v.reason = f"{'; '.join(why)} (prover: {v.reason}; {searched})"
        elif ENABLED:
            v.reason = f"{v.reason} ({searched})"
