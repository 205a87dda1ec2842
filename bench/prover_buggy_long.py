"""Every buggy kernel of the prover corpus proved with a budget that lets its proof finish (10 s a
query, 180 s a variant), so a wrong `proven` cannot hide behind a budget that ran out first (as
bug_tc_no_wait's did until prover-0.8). Prints one line per kernel: the property its bug breaks and
the verdict; exit 1 if any is proven.

    python bench/prover_buggy_long.py [OUT]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers import prover_corpus as T  # noqa: E402
from kreg.checker.prover.prove import CHECKER_VERSION, prove_variant  # noqa: E402


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    lines, unsound = [f"# buggy prover corpus, 10 s a query, 180 s a variant, {CHECKER_VERSION}, "
                      f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"], 0
    for name in T.BUGGY:
        v, t = T.corpus_variant(name), time.time()
        res = prove_variant(v, T.corpus_ops()[v.op], T.corpus_ptx(name), timeout_ms=10000, budget_ms=180000)
        prop = T.LABELS[name]["breaks"]
        unsound += res[prop].status == "proven"
        lines.append(f"{name:32} {prop:12} {res[prop].status:8} {time.time() - t:6.1f} s  {(res[prop].reason or '')[:90]}")
        print(lines[-1], flush=True)
    lines.append(f"# {len(T.BUGGY)} buggy kernels, {unsound} proven on the property they break")
    if argv:
        Path(argv[0]).write_text("\n".join(lines) + "\n")
    print(lines[-1])
    return 1 if unsound else 0


if __name__ == "__main__":
    sys.exit(main())
