"""bench/ stays an index of instruments: every script in bench/ has its row in bench/README.md, every file
under bench/results/ is cited by the README, bench/README.md or docs/, every results file and bench script
those cite exists, and no test loads a bench script (what tests share lives in tests/helpers/)."""
import re
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"


def _docs() -> dict[str, str]:
    """The texts that may cite bench files: the README, bench/README.md and docs/."""
    files = [ROOT / "README.md", BENCH / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(f.relative_to(ROOT)): f.read_text() for f in files}


def _scripts() -> list[str]:
    return sorted(f.name for f in BENCH.iterdir() if f.is_file() and f.name != "README.md")


def _results() -> list[str]:
    return sorted(str(f.relative_to(RESULTS)) for f in RESULTS.rglob("*") if f.is_file())


def test_the_index_sees_the_bench():
    assert "engine_gpu.py" in _scripts() and "engine_gpu_4b.txt" in _results()   # the README's table


@pytest.mark.parametrize("script", _scripts())
def test_every_bench_script_has_a_row_in_bench_readme(script):
    rows = [ln for ln in (BENCH / "README.md").read_text().splitlines() if ln.startswith("|")]
    assert any(re.match(rf"\|[^|]*`{re.escape(script)}`", ln) for ln in rows), \
        f"bench/{script} has no row in bench/README.md (what it measures, how to run it)"


@pytest.mark.parametrize("result", _results())
def test_every_results_file_is_cited(result):
    texts = _docs()
    assert any(f"results/{result}" in t for t in texts.values()), \
        f"bench/results/{result} is cited neither by README.md, bench/README.md nor docs/: cite it or delete it"


def _cited(pattern: str) -> set[tuple[str, str]]:
    return {(doc, m) for doc, t in _docs().items() for m in re.findall(pattern, t)}


def test_every_cited_results_file_exists():
    missing = []
    for doc, path in _cited(r"(?:bench/)?results/[\w.*-]+\w"):
        name = path.split("results/", 1)[1]
        if not (list(RESULTS.glob(name)) if "*" in name else (RESULTS / name).is_file()):
            missing.append(f"{doc}: {path}")
    assert not missing, missing


def test_every_bench_script_cited_outside_bench_exists():
    missing = [f"{doc}: {path}" for doc, path in _cited(r"bench/\w+\.(?:py|sh)")
               if doc != "bench/README.md" and not (ROOT / path).is_file()]
    assert not missing, missing


def test_no_test_loads_a_bench_script():
    loads = re.compile(r"(sys\.path\.(insert|append)|spec_from_file_location|import_module)\(.*[\"']bench[\"'/]")
    offenders = [str(f.relative_to(ROOT)) for f in sorted((ROOT / "tests").rglob("*.py"))
                 if f.resolve() != Path(__file__).resolve() and loads.search(f.read_text())]
    assert not offenders, f"tests that load bench scripts (move what they need to tests/helpers/): {offenders}"
