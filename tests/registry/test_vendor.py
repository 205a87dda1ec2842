"""Vendor variants (cuBLAS for gemv): metadata, the catalog, the pipeline (never proven, `unverified` at
best, GPU only), the profiles (fastest may take one, safe-only never), submit (refused); on the GPU the
same numerics checks as every kernel (marked gpu)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kreg.pipeline import verify_variant
from kreg.registry.catalog import load_catalog
from kreg.registry.profiles import resolve
from kreg.registry.schema import SchemaError, load_variant
from kreg.registry.store import Store

from helpers.store_records import GPU, verified


def _vendor_yaml(tmp_path, **over):
    data = {"op": "gemv", "name": "g", "safety": "vendor", "library": "cublas", "types": "{DT: bf16}"} | over
    p = tmp_path / "g.yaml"
    p.write_text("".join(f"{k}: {v}\n" for k, v in data.items() if v is not None))
    return p


def test_vendor_variants_are_in_the_catalog_but_not_among_the_kernels():
    cat = load_catalog()
    assert not cat.errors
    vendor = {e.name: e for e in cat.entries if e.variant.vendor}
    assert set(vendor) >= {"gemv_bf16_cublas", "gemv_f16_cublas"}
    assert not {e.name for e in cat.kernels} & set(vendor)
    v = vendor["gemv_bf16_cublas"].variant
    assert v.library == "cublas" and v.entry == "cublas_gemv"
    assert [a.param or a.expr.text for a in v.launches[0].args] == ["W", "x", "y", "N", "K"]
    with pytest.raises(ValueError, match="no source"):
        v.source_path


def test_vendor_metadata_errors_name_the_key(tmp_path):
    ops = load_catalog().ops
    assert load_variant(_vendor_yaml(tmp_path), ops).library == "cublas"
    for over, key, msg in [({"library": "rocblas"}, "library", "expected one of cublas"),
                           ({"op": "add", "types": "{T: bf16}"}, "library", "no routine for op add"),
                           ({"source": "g.cu"}, "", "unknown key 'source'"),
                           ({"library": None}, "", "missing required key 'library'"),
                           ({"types": "{DT: f32}"}, "types.DT", "expected one of bf16, f16")]:
        with pytest.raises(SchemaError) as e:
            load_variant(_vendor_yaml(tmp_path, **over), ops)
        assert e.value.path == key and msg in e.value.message, (over, str(e.value))


def test_vendor_on_the_cpu_is_an_environment_error_not_a_verdict():
    cat = load_catalog()
    e = cat.find("gemv_bf16_cublas")
    r = verify_variant(e, cat.ops["gemv"], "cpu")
    assert r.verdict == "error" and "GPU only" in r.environment_error and not r.complete


def test_kreg_verify_of_a_named_vendor_variant_on_the_cpu_says_it_needs_the_gpu(tmp_path):
    env = dict(os.environ, KREG_HOME=str(tmp_path))
    p = subprocess.run([sys.executable, "-m", "kreg.cli", "verify", "gemv_bf16_cublas", "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 3, p.stderr
    (r,) = json.loads(p.stdout)["variants"]
    assert r["verdict"] == "error" and r["safety"] == "vendor"
    p = subprocess.run([sys.executable, "-m", "kreg.cli", "list", "--op", "gemv", "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    rows = {r["name"]: r for r in json.loads(p.stdout)}
    assert rows["gemv_f16_cublas"]["source"] == "cublas (vendor library)"


def test_fastest_may_take_a_vendor_variant_safe_only_never(tmp_path):
    cat, store = load_catalog(), Store(tmp_path / "r.sqlite")
    v = {e.name: e for e in cat.entries if e.op == "gemv"}
    verified(store, v["gemv_bf16_safe"], "safe", device_kind=GPU, median_us=9.0)
    verified(store, v["gemv_bf16_cublas"], "unverified", device_kind=GPU, proofs="unknown", median_us=5.0)
    pick = lambda res: next(c for c in res.choices if c.op == "gemv" and c.types == {"DT": "bf16"})
    fastest = pick(resolve("fastest", "gpu", cat, store, "prover-test"))
    assert fastest.variant == "gemv_bf16_cublas" and "slower" in fastest.passed_over["gemv_bf16_safe"]
    safe = pick(resolve("safe-only", "gpu", cat, store, "prover-test"))
    assert safe.variant == "gemv_bf16_safe" and "never proven" in safe.passed_over["gemv_bf16_cublas"]


def test_the_engine_never_takes_a_vendor_routine_into_its_decode_graph(tmp_path):
    """CuPy refuses cuBLAS calls while a stream captures (found on the H100), so the engine's fastest
    profile passes over a vendor gemv however fast, and takes the fastest kernel; gemm (prefill, not
    captured) may still be cuBLAS."""
    from kreg.engine.plan import _not_capturable
    cat, store = load_catalog(), Store(tmp_path / "r.sqlite")
    v = {e.name: e for e in cat.entries if e.op in ("gemv", "gemm")}
    verified(store, v["gemv_bf16_safe"], "safe", device_kind=GPU, median_us=9.0)
    verified(store, v["gemv_bf16_cublas"], "unverified", device_kind=GPU, proofs="unknown", median_us=5.0)
    res = resolve("fastest", "gpu", cat, store, "prover-test", unusable=_not_capturable)
    gemv = next(c for c in res.choices if c.op == "gemv" and c.types == {"DT": "bf16"})
    assert gemv.variant == "gemv_bf16_safe" and "CUDA graph" in gemv.passed_over["gemv_bf16_cublas"]
    assert _not_capturable(v["gemm_bf16_cublas"]) is None


def test_a_vendor_candidate_is_refused_by_submit(tmp_path, monkeypatch):
    from kreg.submit import submit
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "home"))
    s = submit(None, _vendor_yaml(tmp_path), store=Store(tmp_path / "r.sqlite"))
    assert s.decision == "rejected" and "never submitted" in " ".join(s.why)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["gemv_bf16_cublas", "gemv_f16_cublas", "gemm_bf16_cublas", "gemm_f16_cublas"])
def test_cublas_passes_the_numerics_checks_on_the_gpu(name):
    pytest.importorskip("cupy")
    from kreg.conformance.harness import open_harness
    from kreg.conformance.numerics import run_numerics
    from kreg.conformance.shapes import ragged_dims
    cat = load_catalog()
    e = cat.find(name)
    op = cat.ops[e.op]
    small = {k: d for k, d in op.cases.items() if op.traffic_bytes(d, e.variant.types) < 64 << 20}
    assert small
    small |= {f"seeded-{i}": d for i, d in enumerate(ragged_dims(op, e.variant, 3, 1 << 20, seed=1))}
    num = run_numerics(open_harness("gpu"), None, e.variant, op, small)
    assert num.status == "pass", num.failures()


@pytest.mark.parametrize("name", ["gemv_bf16_cublas", "gemm_f16_cublas"])
def test_a_vendor_launch_binds_as_its_routine_takes_it(name):
    """bind() against the routine's signature (what the GPU's VendorModule exposes): pointers for the
    buffers, 32-bit dims, in the order runtime/vendor.py passes them to cublasGemmEx."""
    import numpy as np
    from types import SimpleNamespace
    from kreg.checker.ptx.bind import bind
    from kreg.runtime.vendor import signature
    cat = load_catalog()
    e = cat.find(name)
    op = cat.ops[e.op]
    params = signature(e.variant.library, e.op)
    module = SimpleNamespace(kernel=lambda entry: SimpleNamespace(params=params))
    dims = next(iter(op.cases.values()))
    ptrs = {p: 4096 * (i + 1) for i, p in enumerate(op.params)}
    (bl,) = bind(e.variant, op, module, dims, ptrs)
    n_buf = sum(1 for p in params if p.type == "u64")
    assert [int(a) for a in bl.args[:n_buf]] == [ptrs[p.name] for p in params[:n_buf]]
    assert [int(a) for a in bl.args[n_buf:]] == [dims[p.name] for p in params[n_buf:]]
    assert all(type(a) is np.int32 for a in bl.args[n_buf:])
