"""A fast subset of bench/mutation_fuzz.py (the fuzzer: tests/helpers/mutation_fuzz.py): the emulator oracle
sees no violation in correct kernels and the labelled one in buggy corpus kernels; a few deterministic
mutants of small correct kernels are never `proven` on a property their emulator run violates."""
from __future__ import annotations

import random
from functools import cache

import pytest
import yaml

from helpers import mutation_fuzz as F
from kreg.checker.ptx import parse as P
from kreg.registry.schema import load_op, load_variant

from helpers.paths import DATA

CORPUS = DATA / "prover_corpus"


@cache
def subject(name):
    return next(s for s in F.subjects() if s.name == name)


def _violations(variant, op, ptx, seed=0, n=3):
    rnd = random.Random(seed)
    module = P.parse(ptx)
    seen = set()
    for dims in F.shapes(op, variant, rnd, n):
        seen |= F.emulate(variant, op, module, dims, rnd) or set()
    return seen


@pytest.mark.parametrize("name", ["vec_basic", "rows_shared", "transpose_tiled", "hist_atomic", "gather_rows",
                                  "gather_row_bf16_safe"])
def test_oracle_quiet_on_correct_kernels(name):
    s = subject(name)
    assert _violations(s.variant, s.op, s.ptx) == set()


@pytest.mark.parametrize("name", ["bug_off_by_one", "bug_two_per_index", "bug_missing_barrier",
                                  "bug_early_return_barrier", "bug_write_input"])
def test_oracle_sees_the_labelled_bug(name):
    labels = yaml.safe_load((CORPUS / "labels.yaml").read_text())
    ops = {o.name: o for o in (load_op(p) for p in sorted((CORPUS / "ops").glob("*.yaml")))}
    v = load_variant(next(CORPUS.glob(f"*/*/{name}.yaml")), ops)
    ptx = F._compile(v)
    assert labels[name]["breaks"] in _violations(v, ops[v.op], ptx, n=4)


KINDS = ["addr+1", "bound", "drop-guard", "drop-barrier", "redirect", "widen", "stride"]


def _mutants():
    """One mutant per kind and small subject, chosen by a fixed seed (rows_shared proofs are slower)."""
    out = []
    small = (("vec_basic", KINDS), ("transpose_tiled", KINDS), ("rows_shared", ["drop-barrier", "warp-barrier"]))
    for name, kinds in small:
        by = {}
        for kind, what, text in F.mutations(subject(name)):
            by.setdefault(kind, []).append((what, text))
        for kind in kinds:
            if by.get(kind):
                what, text = random.Random(f"{name}/{kind}").choice(by[kind])
                out.append(F.Mutant(subject(name), kind, what, text))
    return out


@pytest.mark.parametrize("m", _mutants(), ids=lambda m: m.name)
def test_no_mutant_proven_on_a_property_it_violates(m):
    F.run_mutant(m, random.Random(m.name), 2, timeout_ms=2000, budget_ms=6000)
    assert m.ran, "the emulator ran no shape"
    assert not F.unsound(m), f"{m.name}: proven although the emulator shows {m.violations}: {m.verdicts}"


def test_unsound_flags_a_proof_the_emulator_contradicts():
    """The soundness check itself: all-dims proofs always count, case proofs only at their case's dims."""
    s = subject("vec_basic")
    m = F.Mutant(s, "x", "-", s.ptx, violations={"in_bounds": [{"N": 8}], "race_free": [{"N": 1}]})
    m.verdicts = {"in_bounds": ("proven", "all-dims", None), "race_free": ("proven", "cases:small", None)}
    assert F.unsound(m) == ["in_bounds"]
    m.violations["race_free"].append(dict(s.op.cases["small"]))
    assert F.unsound(m) == ["in_bounds", "race_free"]


SHARED_BELOW = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k()
{
.shared .align 4 .b8 buf[64];
.reg .b64 %rd<2>;
mov.u64 %rd1, buf;
st.shared.u32 [%rd1+-4], 7;
ret;
}
"""


def test_emulator_shared_access_below_zero_is_out_of_bounds():
    """Found by the fuzzer (an addr-1 mutant): the emulator's shared-memory bound check wrapped around,
    so a store 4 bytes below the window passed it and landed in another block's shared memory."""
    from kreg.checker.emulator import machine as E
    with pytest.raises(E.EmulatorError, match="out-of-bounds"):
        E.launch(SHARED_BELOW, "k", 2, 32, 0, [], E.Memory())


def test_predicated_exit_before_a_barrier_is_not_proven_barrier_safe():
    """Found by the fuzzer: rows_shared with `@%p ret;` inserted after a setp ahead of a bar.sync. The
    emulator releases that barrier with part of the block gone; prover-0.2 proved barrier_safe (the
    predicated exit had no edge to the kernel's exit); since prover-0.3 it is not proven."""
    s = subject("rows_shared")
    text = next(t for k, w, t in F.mutations(s) if k == "exit-before-barrier" and w == "L168")
    m = F.Mutant(s, "exit-before-barrier", "L168", text)
    F.run_mutant(m, random.Random(0), 2, timeout_ms=2000, budget_ms=6000)
    assert "barrier_safe" in m.violations
    assert m.verdicts["barrier_safe"][0] != "proven"
