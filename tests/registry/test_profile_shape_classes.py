"""Profiles choose per shape class (registry/shape_classes.py), from a results store made by hand: the
variant fastest over the named cases of a T range runs for dims of that range no named case has (the
engine's prefill of a model whose N and K no case names), an exact case's own choice first, the default
where no class choice was compared; and the engine's plan runs them (engine/plan.py OpKernel.at)."""
import pytest
from kreg.registry.catalog import load_catalog
from kreg.registry.profiles import resolve
from kreg.registry.shape_classes import ShapeClass, by_class, classes
from kreg.registry.store import Store

from kreg import runtime

from helpers.store_records import GPU, verified

CASES = {"qwen3-0.6b-qkv": 1.0, "qwen3-4b-qkv": 1.0, "qwen3-4b-qkv-t8192": 1.0, "qwen3-4b-qkv-t1": 1.0,
         "ragged-t3-n259-k520": 1.0, "qwen3-4b-qkv-t17": 1.0, "ragged-t33-n100-k264": 1.0}
PREFILL = ("qwen3-0.6b-qkv", "qwen3-4b-qkv", "qwen3-4b-qkv-t8192")          # T > 512
DECODE = ("qwen3-4b-qkv-t1", "ragged-t3-n259-k520")                           # T <= 16


def test_classes_cut_T_and_name_their_ranges():
    cs = classes({"T": [1, 8192], "N": [1, 262144], "K": [8, 65536]})
    assert [c.name for c in cs] == ["T <= 16", "16 < T <= 512", "T > 512"]
    assert [c.contains({"T": t, "N": 5, "K": 8}) for c in cs for t in (16, 17, 512, 513)] == \
        [True, False, False, False, False, True, True, False, False, False, False, True]
    assert classes({"N": [1, 10], "K": [8, 64]}) == []                        # no T: exact cases only
    assert [c.name for c in classes({"T": [1, 16]})] == ["T <= 16"]           # only the ranges the op allows


@pytest.fixture
def gemm(tmp_path):
    cat = load_catalog()
    v = {e.name: e for e in cat.entries if e.op == "gemm"}
    return cat, Store(tmp_path / "r.sqlite"), v["gemm_tc_bf16_safe"], v["gemm_wgs_bf16_safe"], v["gemm_tiled_bf16_safe"]


def _times(fast: tuple, us: float, slow: float = 10.0) -> dict:
    return {n: (us if n in fast else slow) for n in CASES}


def _pick(cat, store, profile="safe-only", device="gpu"):
    res = resolve(profile, device, cat, store, "prover-test")
    return next(c for c in res.choices if c.op == "gemm" and c.types == {"DT": "bf16"})


def test_the_fastest_over_a_class_runs_for_its_other_dims(gemm):
    cat, store, tc, wgs, tiled = gemm
    # tc: the default (fastest over all the cases); wgs: fastest over the prefill class; tiled: slowest
    verified(store, tc, "safe", device_kind=GPU, median_us=5.0, cases=_times(PREFILL, 5.0, 1.0))
    verified(store, wgs, "safe", device_kind=GPU, median_us=2.0, cases=_times(PREFILL, 2.0, 30.0))
    verified(store, tiled, "safe", device_kind=GPU, median_us=9.0, cases=_times((), 9.0, 20.0))
    for profile in ("safe-only", "fastest"):
        c = _pick(cat, store, profile)
        assert c.variant == tc.name, profile
        assert list(c.by_class) == ["T > 512"]
        cc = c.by_class["T > 512"]
        assert cc.variant == wgs.name and cc.cases == tuple(sorted(PREFILL)) and cc.us == pytest.approx(2.0)
        assert cc.default_us == pytest.approx(5.0) and "over the 3 named case(s) with T > 512" in cc.why
        assert "runs instead for other dims with T > 512" in c.passed_over[wgs.name]
        assert c.to_json()["by_class"]["T > 512"]["class"]["bounds"] == [{"dim": "T", "min": 513, "max": None}]


def test_no_class_choice_without_a_comparison_or_a_faster_one(gemm):
    cat, store, tc, wgs, tiled = gemm
    only_small = {n: t for n, t in _times((), 1.0, 1.0).items() if n not in PREFILL}
    verified(store, tc, "safe", device_kind=GPU, median_us=1.0, cases=only_small)     # never timed at T > 512
    verified(store, wgs, "safe", device_kind=GPU, median_us=2.0, cases=_times(PREFILL, 2.0, 30.0))
    c = _pick(cat, store)
    assert c.variant == tc.name and c.by_class == {}
    verified(store, tc, "safe", device_kind=GPU, median_us=1.0, cases=_times((), 1.0, 1.0))   # faster everywhere
    assert _pick(cat, store).by_class == {}


def test_the_class_compares_the_cases_every_competitor_was_timed_at():
    class E:
        def __init__(self, name):
            self.name = self.hash = name
    cases = {"a": {"T": 2048}, "b": {"T": 4096}, "c": {"T": 1}}
    timed = [(E("d"), "p1", {"a": 4.0, "b": 4.0, "c": 1.0}), (E("x"), "p2", {"a": 1.0})]
    got = by_class({"T": [1, 8192]}, cases, timed, "d")
    assert list(got) == ["T > 512"] and got["T > 512"].cases == ("a",) and got["T > 512"].variant == "x"


class _K:
    """An OpKernel's stand-in for at(): its name."""
    def __init__(self, name):
        self.name = name


def test_the_plan_runs_the_exact_case_first_then_the_class_then_the_default():
    from kreg.engine.plan import OpKernel, _dims_key
    k = OpKernel.__new__(OpKernel)
    k.by_dims = {_dims_key({"T": 2048, "N": 6144, "K": 2560}): _K("exact")}
    k.by_class = [(ShapeClass((("T", 513, None),)), _K("class"))]
    assert k.at({"T": 2048, "N": 6144, "K": 2560}).name == "exact"
    assert k.at({"T": 2048, "N": 5000, "K": 1000}).name == "class"
    assert k.at({"T": 7, "N": 5000, "K": 1000}) is k


def test_from_profile_loads_the_class_choice_for_the_engines_prefill(gemm, monkeypatch):
    """The engine's plan, from the store, on the CPU: a prefill gemm at dims no named case has runs the
    class's variant (compiled here, its PTX sha256 the one the store names)."""
    from kreg.checker.ptx.compile import compile_cuda
    from kreg.engine import plan as P
    cat, store, tc, wgs, tiled = gemm
    dev = runtime.device("cpu")
    kind = dev.describe()
    ptx = {e.name: compile_cuda(e.variant.source_path.read_text(), e.variant.source_path.name,
                                e.variant.options).sha256 for e in (tc, wgs)}
    verified(store, tc, "safe", device_kind=kind, checker=P.CHECKER_VERSION, median_us=5.0, ptx=ptx[tc.name],
              cases=_times(PREFILL, 5.0, 1.0))
    verified(store, wgs, "safe", device_kind=kind, checker=P.CHECKER_VERSION, median_us=2.0, ptx=ptx[wgs.name],
              cases=_times(PREFILL, 2.0, 30.0))
    plan = P.from_profile("safe-only", dev, "bf16", ops=("gemm",), catalog=cat, store=store, optional=())
    g = plan["gemm"]
    assert g.name == tc.name and g.at({"T": 2048, "N": 5000, "K": 1000}).name == wgs.name
    assert g.at({"T": 100, "N": 5000, "K": 1000}) is g
    [row] = plan.report()
    assert row["by_class"][0]["class"] == "T > 512" and row["by_class"][0]["variant"] == wgs.name
