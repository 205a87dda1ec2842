"""Mutation fuzzing of the prover's soundness over every correct kernel (the prover corpus's correct ones and
the registry's safe variants): mutants of their PTX run in the CPU emulator and through the prover; no mutant
whose emulator run violates a property may be `proven` on it. The fuzzer is tests/helpers/mutation_fuzz.py
(its docstring has the mutations and the oracle); tests/checker/emulator/test_mutation_fuzz.py runs a fast subset.

    python bench/mutation_fuzz.py [--seed 1] [--per-kernel 8] [--shapes 3] [--timeout-ms 2000]
        [--budget-ms 8000] [--only NAME] [--out bench/results/mutation_fuzz.txt]"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from kreg.checker.prover.prove import PROPS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.mutation_fuzz import (KNOWN, MAX_THREADS, ROOT, Mutant, generate, run_mutant,  # noqa: E402
                                   subjects, unsound)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-kernel", type=int, default=8)
    ap.add_argument("--shapes", type=int, default=3)
    ap.add_argument("--timeout-ms", type=int, default=2000)
    ap.add_argument("--budget-ms", type=int, default=8000)
    ap.add_argument("--only")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "mutation_fuzz.txt"))
    a = ap.parse_args(argv)
    t0 = time.time()
    ms = generate(a.seed, a.per_kernel, a.only)
    rnd = random.Random(a.seed)
    counts = {p: {"proven": 0, "refuted": 0, "unknown": 0} for p in PROPS}
    viol = {p: 0 for p in PROPS}
    bad, lines = [], []
    for i, m in enumerate(ms):
        t = time.time()
        run_mutant(m, rnd, a.shapes, a.timeout_ms, a.budget_ms)
        for p in PROPS:
            if p in m.verdicts:
                counts[p][str(m.verdicts[p][0])] += 1
            viol[p] += p in m.violations
        u = unsound(m)
        bad += [(m, p) for p in u]
        line = (f"{m.name:60s} shapes {m.ran} violates {sorted(m.violations) or '-'} prover "
                f"{ {p[:4]: str(v[0])[0] for p, v in m.verdicts.items()} } {time.time() - t:.1f}s"
                + (f"  UNSOUND {u}" if u else ""))
        lines.append(line)
        print(f"[{i + 1}/{len(ms)}] {line}", flush=True)
    controls = [run_mutant(Mutant(s, "original", "-", s.ptx), rnd, a.shapes, 0, 0, prove=False)
                for s in subjects() if not a.only or a.only in s.name]
    noisy = [c for c in controls if c.violations]
    ran = sum(m.ran > 0 for m in ms)
    report = [f"# bench/mutation_fuzz.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
              "# machine: CPU (2 cores, shared)",
              f"# seed {a.seed}, {a.per_kernel} mutants per kernel, {a.shapes} emulator shapes each "
              f"(dims near their low end, <= {MAX_THREADS} threads), prover timeout {a.timeout_ms} ms, "
              f"budget {a.budget_ms} ms per mutant; {time.time() - t0:.0f} s in all",
              f"subjects: {len({m.subject.name for m in ms})} correct kernels (prover corpus + registry safe)",
              f"mutants generated: {len(ms)}; ran in the emulator (>= 1 shape): {ran}; "
              f"emulator-violating (any property): {sum(bool(m.violations) for m in ms)}",
              f"controls (unmutated subjects through the same oracle): {len(controls)}, violating: {len(noisy)} "
              f"{[(c.subject.name, sorted(c.violations)) for c in noisy]}",
              "", f"{'property':14s} {'violating':>9s} {'proven':>7s} {'refuted':>8s} {'unknown':>8s}"]
    for p in PROPS:
        report.append(f"{p:14s} {viol[p]:9d} {counts[p]['proven']:7d} {counts[p]['refuted']:8d} "
                      f"{counts[p]['unknown']:8d}")
    by_kind = {}
    for m in ms:
        k = by_kind.setdefault(m.kind, [0, 0])
        k[0] += 1
        k[1] += bool(m.violations)
    report += ["", "by mutation kind (mutants, emulator-violating): " +
               ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(by_kind.items()))]
    new = [(m, p) for m, p in bad if (m.kind, p) not in KNOWN]
    report += ["", f"UNSOUND (proven although the emulator shows the violation): {len(bad)}, of them in a known "
               f"defect class: {len(bad) - len(new)}, new: {len(new)}"]
    report += [f"  {m.name} {p} at {m.violations[p][:2]}: {m.verdicts[p][:2]}"
               + (f"  [known class: {KNOWN[m.kind, p]}]" if (m.kind, p) in KNOWN else "  [NEW]") for m, p in bad]
    report += ["", "per mutant:"] + ["  " + x for x in lines]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("\n".join(report) + "\n")
    print("\n".join(report[:15 + len(bad)]))
    return 1 if new or noisy else 0


if __name__ == "__main__":
    sys.exit(main())
