"""The prover's labelled corpus (tests/data/prover_corpus): its ops, variants and PTX, and the verdicts of
the prover on them at the tests' timeout (cached per process, shared by every test that proves them)."""
from __future__ import annotations

import os
from functools import cache

import yaml

from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover import records
from kreg.checker.prover.prove import prove_variant
from kreg.registry.schema import load_op, load_variant

from helpers.paths import DATA

CORPUS = DATA / "prover_corpus"
RECORDS = CORPUS / "records"
LABELS = yaml.safe_load((CORPUS / "labels.yaml").read_text())
TIMEOUT_MS = int(os.environ.get("KREG_PROVER_TEST_TIMEOUT_MS", "4000"))


@cache
def corpus_ops():
    return {o.name: o for o in (load_op(p) for p in sorted((CORPUS / "ops").glob("*.yaml")))}


@cache
def corpus_variant(name):
    p = next(CORPUS.glob(f"*/*/{name}.yaml"))
    return load_variant(p, corpus_ops())


@cache
def corpus_ptx(name):
    v = corpus_variant(name)
    return compile_cuda(v.source_path.read_text(), v.source_path.name, v.options).ptx


@cache
def corpus_prove(name, timeout_ms=TIMEOUT_MS):
    """The verdicts at the tests' budget, following the kernel's proof record (RECORDS/<name>.json) where it
    fits, as `kreg verify` follows the registry's: the same verdicts as a full search, faster."""
    v = corpus_variant(name)
    return prove_variant(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=timeout_ms, budget_ms=3 * timeout_ms,
                         record=records.load(RECORDS / f"{name}.json"))


def _record(name):
    from kreg.checker.prover.prove import prove
    v = corpus_variant(name)
    p = prove(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=TIMEOUT_MS, budget_ms=3 * TIMEOUT_MS, isolate=False)
    return name, p.record.to_json() if p.record else None


def write_records(jobs: int = 1) -> None:
    """Every corpus kernel's full search at the tests' budget, its record written to RECORDS (after a checker
    change: `cd tests && python -m helpers.prover_corpus [JOBS]`)."""
    import multiprocessing as mp
    RECORDS.mkdir(exist_ok=True)
    with mp.get_context("fork").Pool(jobs, maxtasksperchild=4) as pool:
        for name, rec in pool.imap_unordered(_record, sorted(LABELS)):
            if rec:
                records.Record.from_json(rec).save(RECORDS / f"{name}.json")
            print(name, "recorded" if rec else "no record", flush=True)


BUGGY = sorted(n for n, lab in LABELS.items() if not lab["correct"])
CORRECT = sorted(n for n, lab in LABELS.items() if lab["correct"])


if __name__ == "__main__":
    import sys
    write_records(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
