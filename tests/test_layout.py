"""tests/ keeps its layout: no test module imports another (what tests share lives in tests/helpers), and
test file names are unique across the folders (pytest's default import mode needs it)."""
import ast
from collections import Counter

from helpers.paths import DATA, TESTS

TEST_FILES = sorted(p for p in TESTS.rglob("test_*.py") if not p.is_relative_to(DATA))


def _imported(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_no_test_module_imports_another():
    offenders = {str(p.relative_to(TESTS)): m for p in TEST_FILES
                 for m in _imported(p) if m.split(".")[-1].startswith("test_")}
    assert not offenders, f"move what these share into tests/helpers/: {offenders}"


def test_test_file_names_are_unique():
    assert len(TEST_FILES) > 50
    twice = [name for name, n in Counter(p.name for p in TEST_FILES).items() if n > 1]
    assert not twice, f"test files named alike in two folders: {twice}"
