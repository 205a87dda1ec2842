"""Where things are: the repository root, tests/ and its data folder (tests/data: the corpora, hostile
and broken submissions, intake forms, reward hacks, a schema-1 store)."""
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
DATA = TESTS / "data"
