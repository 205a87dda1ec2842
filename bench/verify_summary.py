"""Print the verdicts, proofs, numerics, speed and stage times of a `kreg verify --json` result (one line
per variant and case), then the wall time of each op's stages.

    python3 bench/verify_summary.py verify.json
"""
from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    data = json.load(open(path))
    print(f"kreg verify --device {data['device']} ({data.get('date', '?')}), kreg {data.get('tool_version')}")
    for r in data["variants"]:
        sp = r.get("speed") or {}
        print(f"\n{r['op']}/{r['name']} ({r['safety']}): numerics {r['numerics']}, verdict {r['verdict']}"
              f" on {r.get('device_detail', '?')}")
        print("  proofs " + " ".join(f"{p}={s}" for p, s in r["proofs"].items())
              + "  stage seconds " + " ".join(f"{k}={v:.1f}" for k, v in (r.get("stage_seconds") or {}).items()))
        for c in r.get("numerics_detail", []):
            st = c["outputs"]
            errs = ", ".join(f"{k}: max abs {v['max_abs_err']:.3g} rel {v['max_rel_err']:.3g}" for k, v in st.items())
            print(f"  numerics {c['case']:24s} {str(c['dims']):34s} {'pass' if c['pass'] else 'FAIL'}  {errs}")
        if sp:
            print(f"  copy bandwidth measured in the same process: {sp['copy_tb_per_s']:.3f} TB/s")
            for case, t in sp["cases"].items():
                ratio = (sp.get("ratio_to_fastest") or {}).get(case)
                flag = "  ABOVE ROOFLINE: broken kernel or measurement" if t["above_roofline"] else ""
                print(f"  speed {case:24s} {t['median_us']:10.2f} us (p10 {t['p10_us']:.2f}, p90 {t['p90_us']:.2f}) "
                      f"{t['tb_per_s']:6.3f} TB/s {t['pct_of_copy_bw']:6.1f}% of copy"
                      f"  sets {t['buffer_sets']} ({t['working_set_bytes'] / 1e6:.0f} MB)"
                      + (f"  x{ratio:.3f} of fastest" if ratio else "") + flag)
        for why in r["reasons"]:
            print(f"  reason: {why}")
    ops: dict[str, dict[str, float]] = {}
    for r in data["variants"]:
        for k, v in (r.get("stage_seconds") or {}).items():
            ops.setdefault(r["op"], {}).setdefault(k, 0.0)
            ops[r["op"]][k] += v
    print("\nstage seconds summed over each op's variants (variants overlap: see the run's wall time)")
    for op, st in sorted(ops.items()):
        print(f"  {op:22s} " + " ".join(f"{k} {v:7.1f}" for k, v in st.items()) + f"  total {sum(st.values()):7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
