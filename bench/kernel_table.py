"""The kernel-set table of a `kreg verify --device gpu --json` run (one JSON document, or one per line, e.g.
bench/results/verify_gpu_registry.json): per op, each variant's verdict, proofs and speed at its largest
timed case (% of the copy bandwidth measured in the same process), and the safe/unsafe time ratio per
dtype. Proofs: properties proven for all dims, then +Nc for those proven only for each named case. Output saved as bench/results/kernel_table.txt."""
from __future__ import annotations

import json
import sys


def main(path: str):
    text = open(path).read()
    try:                                      # one JSON document, or one per line
        docs = [json.loads(text)]
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    rows = [v for d in docs for v in d["variants"]]
    print(f"# from {path}: {rows[0]['speed']['device'] if rows and rows[0].get('speed') else '?'}")
    print(f"{'op':22s} {'variant':32s} {'verdict':8s} {'proofs':9s} {'case':20s} {'us':>9s} {'%copy':>6s}")
    by_op: dict[str, list] = {}
    for v in rows:
        by_op.setdefault(v["op"], []).append(v)
        sp = v.get("speed") or {}
        scopes = {p: (v.get("proof_details") or {}).get(p, {}).get("scope") for p in v["proofs"]}
        proven = [p for p, s in v["proofs"].items() if s == "proven"]
        alldims = sum(scopes[p] in (None, "all-dims") for p in proven)
        cell = f"{alldims}/4" + (f"+{len(proven) - alldims}c" if len(proven) > alldims else "")
        print(f"{v['op']:22s} {v['name']:32s} {v['verdict']:8s} {cell:9s} {sp.get('case', '-'):20s} "
              f"{sp.get('median_us', float('nan')):9.2f} {sp.get('pct_of_copy_bw', float('nan')):6.1f}")
    print("\n# safe / unsafe median time at the same case (<= 1.10 is the target)")
    for op, vs in by_op.items():
        for dt in sorted({json.dumps(v["types"]) for v in vs}):
            pair = {v["safety"]: v for v in vs if json.dumps(v["types"]) == dt}
            if {"safe", "unsafe"} <= set(pair) and pair["safe"].get("speed") and pair["unsafe"].get("speed"):
                s, u = pair["safe"]["speed"], pair["unsafe"]["speed"]
                if s["case"] == u["case"]:
                    print(f"{op:22s} {dt:16s} {s['case']:20s} {s['median_us'] / u['median_us']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/verify_gpu_registry.json")
