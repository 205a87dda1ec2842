"""The prover's labelled corpus (tests/data/prover_corpus): its ops, variants and PTX, and the verdicts of
the prover on them at the tests' timeout (cached per process, shared by every test that proves them,
following the proof records of helpers/recorded.py)."""
from __future__ import annotations

import os
from functools import cache

import yaml

from kreg.checker.ptx.compile import compile_cuda
from kreg.registry.schema import load_op, load_variant

from helpers.paths import DATA
from helpers.recorded import prove_recorded

CORPUS = DATA / "prover_corpus"
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


def corpus_budget(name, timeout_ms=TIMEOUT_MS) -> int:
    """The tests' budget for a corpus kernel: its label's budget_ms, else three times a query's."""
    return LABELS.get(name, {}).get("budget_ms") or 3 * timeout_ms


@cache
def corpus_prove(name, timeout_ms=TIMEOUT_MS, budget_ms=None):
    """The verdicts at the tests' budget (corpus_budget, unless given)."""
    v = corpus_variant(name)
    budget_ms = budget_ms or corpus_budget(name, timeout_ms)
    return prove_recorded(v, corpus_ops()[v.op], corpus_ptx(name), timeout_ms=timeout_ms,
                          budget_ms=budget_ms).verdicts


BUGGY = sorted(n for n, lab in LABELS.items() if not lab["correct"])
CORRECT = sorted(n for n, lab in LABELS.items() if lab["correct"])

