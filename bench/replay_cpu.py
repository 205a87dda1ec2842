"""CPU seconds of proof-record replays in this process (what `kreg verify` and the prover tests repeat): each named
registry variant by its shipped record (kernels/proofs), each named prover-corpus kernel by its test record
(tests/data/records); per replay the CPU seconds (time.process_time), those inside z3's Solver.check, and whether
the replay reproduced the record's work digest and facts. One name per process: the main z3 context's term ids
follow whatever the process proved before (z3's simplify sorts by them), so a second replay in one process may
take other queries (as isolated proofs never do). Run it from two checkouts (each its own install) in turn, one
variant at a time, to compare them on a loaded machine.

    for n in gemm_wgs_bf16_safe bug_wg_pipe_wait2; do python bench/replay_cpu.py $n; done
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import z3  # noqa: E402

from kreg.checker.prover import records, solving  # noqa: E402
from kreg.checker.prover.prove import prove  # noqa: E402
from kreg.checker.ptx.compile import compile_cuda  # noqa: E402
from kreg.pipeline import shipped_record  # noqa: E402
from kreg.registry.catalog import load_catalog  # noqa: E402

CHECK = [0.0]
BUDGETS: list = []


def _timed_check(check):
    def timed(self, *a):
        t = time.process_time()
        try:
            return check(self, *a)
        finally:
            CHECK[0] += time.process_time() - t
    return timed


def _kept(init):
    def kept(self, *a, **k):
        init(self, *a, **k)
        BUDGETS.append(self)
    return kept


def case(name: str):
    """(variant, op, ptx, record, timeout_ms, budget_ms): a registry variant's, else a corpus kernel's."""
    cat = load_catalog()
    entry = next((e for e in cat.kernels if e.variant.name == name), None)
    if entry is not None:
        v = entry.variant
        ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx
        return v, cat.ops[v.op], ptx, shipped_record(name), 10000, v.proof_budget_ms
    from helpers.prover_corpus import TIMEOUT_MS, corpus_budget, corpus_ops, corpus_ptx, corpus_variant
    from helpers.recorded import record_path
    v = corpus_variant(name)
    op, ptx, b = corpus_ops()[v.op], corpus_ptx(name), corpus_budget(name)
    return v, op, ptx, records.load(record_path(v, op, ptx, TIMEOUT_MS, b)), TIMEOUT_MS, b


def replay(name: str) -> dict:
    v, op, ptx, rec, timeout_ms, budget_ms = case(name)
    CHECK[0] = 0.0
    t = time.process_time()
    got = prove(v, op, ptx, timeout_ms=timeout_ms, budget_ms=budget_ms, record=rec, isolate=False)
    cpu = time.process_time() - t
    facts = [list(f) for f in BUDGETS[-1].facts] == [list(f) for f in rec.facts or []]
    return {"name": name, "cpu_s": round(cpu, 1), "z3_check_s": round(CHECK[0], 1),
            "digest_equal": got.work["digest"] == rec.work["digest"], "facts_equal": facts,
            "replay": got.work.get("replay"), "verdicts": {p: x.status.name for p, x in got.verdicts.items()}}


if __name__ == "__main__":
    z3.Solver.check = _timed_check(z3.Solver.check)
    solving.Budget.__init__ = _kept(solving.Budget.__init__)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(json.dumps(replay(sys.argv[1])), flush=True)
