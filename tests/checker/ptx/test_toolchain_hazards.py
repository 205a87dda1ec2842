"""Toolchain hazards (checker/ptx/toolchain.py): PTX that ptxas translates against the PTX ISA is never proven
and never loaded, no shipped kernel has one, and (where ptxas is on the PATH) the hazard is real."""
from __future__ import annotations

import shutil

import pytest

from kreg import runtime
from kreg.checker.ptx import parse as P
from kreg.checker.ptx import toolchain
from kreg.checker.prover import prove as prove_mod
from kreg.checker.ptx.compile import compile_cuda
from kreg.checker.prover.prove import PROPS, prove_variant
from kreg.registry.schema import load_op, load_variant

from helpers.paths import DATA
from helpers.ptx_cache import registry_sources

CORPUS = DATA / "prover_corpus"
SOURCE = CORPUS / "unsafe" / "rows" / "bug_smem_symbol.cu"


def _ptx(renamed: bool = False) -> str:
    src = SOURCE.read_text()
    if renamed:
        src = src.replace("SMEM", "SMEM_BYTES")
    return compile_cuda(src, SOURCE.name).ptx


def test_global_named_smem_is_a_hazard_and_the_renamed_one_is_not():
    bad, good = P.parse(_ptx()), P.parse(_ptx(renamed=True))
    assert len(bad.kernels) == 2 and "SMEM" in bad.globals and bad.globals["SMEM"].space == "global"
    assert [h for h in toolchain.hazards(bad) if "SMEM" in h]
    assert "SMEM_BYTES" in good.globals and toolchain.hazards(good) == []


def test_prover_gives_no_verdict_on_a_hazard():
    ops = {o.name: o for o in (load_op(p) for p in sorted((CORPUS / "ops").glob("*.yaml")))}
    v = load_variant(SOURCE.with_suffix(".yaml"), ops)
    res = prove_variant(v, ops[v.op], _ptx(), timeout_ms=4000, isolate=False)
    assert {p: r.status for p, r in res.items()} == {p: "unknown" for p in PROPS}
    assert all("toolchain hazard" in r.reason and "SMEM" in r.reason for r in res.values())


def test_runtime_refuses_to_load_a_hazard_and_loads_the_renamed_one():
    dev = runtime.device("cpu")
    with pytest.raises(runtime.LoadError, match="SMEM"):
        dev.load(_ptx())
    assert set(dev.load(_ptx(renamed=True)).entries) == {"bug_smem_symbol", "bug_smem_symbol_128"}


def test_the_cubin_check_sees_the_hazard_without_the_name_rule(monkeypatch):
    src, renamed = SOURCE.read_text(), SOURCE.read_text().replace("SMEM", "SMEM_BYTES")
    found = toolchain.assembled_hazards(_ptx(), src, SOURCE.name)
    assert found and all("SMEM" in f for f in found)
    assert toolchain.assembled_hazards(_ptx(renamed=True), renamed, SOURCE.name) == []
    assert toolchain.assembled_hazards(_ptx(renamed=True), src, SOURCE.name) is None     # not that source's PTX
    monkeypatch.setattr(toolchain, "RESERVED_NAMES", {})                                  # a name nobody knew
    ops = {o.name: o for o in (load_op(p) for p in sorted((CORPUS / "ops").glob("*.yaml")))}
    v = load_variant(SOURCE.with_suffix(".yaml"), ops)
    res = prove_mod.prove_variant(v, ops[v.op], _ptx(), timeout_ms=4000, budget_ms=60000, isolate=False)
    assert all(r.status != "proven" for r in res.values())
    assert any("relocates" in (r.reason or "") for r in res.values())


def test_no_shipped_kernel_has_a_hazard():
    for src, name, options in registry_sources():      # every distinct compile of the registry (vendor routines have none)
        ptx = compile_cuda(src, name, options).ptx
        assert toolchain.hazards(P.parse(ptx)) == [], (name, options)
        assert toolchain.assembled_hazards(ptx, src, name, options) == [], (name, options)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs the CUDA toolkit's ptxas on the PATH (the bench's assembler); the product's own check, through NVRTC's cubin, is tested above without it")
def test_ptxas_relocates_shared_addresses_against_a_global_named_smem():
    from helpers import ptxas_probe as hz
    assert toolchain.text_relocations(hz.assemble(_ptx()))["SMEM"] > 0          # the first entry's shared accesses
    assert not toolchain.text_relocations(hz.assemble(_ptx(renamed=True)))        # no relocation at all
    for name in toolchain.RESERVED_NAMES:
        assert toolchain.text_relocations(hz.assemble(hz.module_ptx([name])))[name] > 0, name
