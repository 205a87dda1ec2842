"""Calibrates the emulator's step budget (registry/limits.py): runs every registry variant's CPU cases
(numerics only) and records, per launch, the cost the step budget counts (LaunchResult.cost) against
threads + buffer elements.
Usage: python bench/step_budget.py [--jobs N] > bench/results/step_budget.txt"""
from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor


def one(key: str) -> list[dict]:
    from kreg.checker.emulator import machine as emulator
    from kreg.checker.ptx.compile import compile_cuda
    from kreg.conformance.harness import CpuHarness
    from kreg.conformance.numerics import run_numerics
    from kreg.registry.catalog import load_catalog
    from kreg.pipeline import Options, choose_cases
    cat = load_catalog()
    e = cat.find(key)
    v, op = e.variant, cat.ops[e.op]
    rows, real = [], emulator.launch
    dev = CpuHarness()

    def spy(module, entry, grid, block, shared, args, mem, **kw):
        budget, kw["max_cost"] = kw.get("max_cost"), None      # measure, do not enforce
        res = real(module, entry, grid, block, shared, args, mem, **kw)
        threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
        rows.append({"variant": key, "entry": entry, "steps": res.steps, "cost": res.cost, "threads": threads,
                     "elements": dev.work_elements, "budget": budget})
        return res
    emulator.launch = spy
    ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
    num = run_numerics(dev, ptx, v, op, choose_cases(op, v, "cpu", Options()))
    for r in rows:
        r["numerics"] = num.status
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    from kreg.registry.catalog import load_catalog
    keys = [f"{e.op}/{e.name}" for e in load_catalog().kernels]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = [r for rs in pool.map(one, keys) for r in rs]
    worst = {}
    for r in rows:
        r["ratio"] = r["cost"] / (r["threads"] + r["elements"])
        if r["ratio"] > worst.get(r["variant"], {"ratio": -1})["ratio"]:
            worst[r["variant"]] = r
    for r in sorted(worst.values(), key=lambda r: -r["ratio"]):
        print(f"{r['variant']:48s} {r['entry']:28s} steps {r['steps']:>6d} cost {r['cost']:>6d} threads "
              f"{r['threads']:>6d} elements {r['elements']:>6d} cost/(threads+elements) {r['ratio']:.3f} "
              f"budget {r['budget']} {r['numerics']}")
    print(json.dumps({"launches": len(rows), "max_steps": max(r["steps"] for r in rows),
                      "max_cost": max(r["cost"] for r in rows), "max_ratio": max(r["ratio"] for r in rows),
                      "max_threads": max(r["threads"] for r in rows),
                      "max_share_of_budget": max(r["cost"] / r["budget"] for r in rows)}))


if __name__ == "__main__":
    main()
