"""The order tests start in (helpers/schedule.py): every test it names exists in a module without module-scoped
fixtures (a test moved away from its module would set them up again), and the long ones head the worksteal
shares, balanced, with the rest in their order and LAST at the very end."""
import ast
from types import SimpleNamespace

import pytest

from helpers import schedule
from helpers.paths import TESTS


@pytest.mark.parametrize("nodeid", sorted(k for k in set(schedule.LONG) | set(schedule.LAST) if "::" in k))
def test_named_test_exists(nodeid):
    path, name = nodeid.split("[")[0].split("::")
    tree = ast.parse((TESTS.parent / path).read_text())
    assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, f"{nodeid}: no such test"
    scoped = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) for d in n.decorator_list
              if isinstance(d, ast.Call) and any(k.arg == "scope" for k in d.keywords)]
    assert not scoped, f"{path} has fixtures of a wider scope ({scoped}): moving {name} would set them up again"


@pytest.mark.parametrize("module", sorted(k for k in schedule.LONG if "::" not in k))
def test_named_module_exists(module):
    assert (TESTS.parent / module).is_file(), module


def test_long_tests_head_the_shares_and_last_ends():
    long = {"t.py::a": 9, "t.py::b": 8, "t.py::c": 4, "t.py::d": 3}
    items = [SimpleNamespace(nodeid=f"t.py::{n}") for n in "xaybzcwdvu"] + [SimpleNamespace(nodeid="t.py::last")]
    saved = schedule.LONG, schedule.LAST
    schedule.LONG, schedule.LAST = long, ("t.py::last",)
    try:
        got = [it.nodeid.split("::")[1] for it in schedule.order(items, 2)]
        alone = [it.nodeid.split("::")[1] for it in schedule.order(items, 1)]
    finally:
        schedule.LONG, schedule.LAST = saved
    assert sorted(got) == sorted(alone) == sorted(it.nodeid.split("::")[1] for it in items)
    assert got[:2] == ["a", "d"] and got[5:7] == ["b", "c"]       # worksteal deals 5 and 6 of the 11
    assert [n for n in got if n in "xyzwvu"] == list("xyzwvu") and got[-1] == "last"
    assert alone[:4] == ["a", "b", "c", "d"] and alone[-1] == "last"


def test_a_long_module_stays_together():
    items = [SimpleNamespace(nodeid=n) for n in ("a.py::x", "m.py::p", "a.py::y", "m.py::q", "a.py::z", "l.py::t")]
    saved = schedule.LONG, schedule.LAST
    schedule.LONG, schedule.LAST = {"m.py": 5, "l.py::t": 9}, ()
    try:
        got = [it.nodeid for it in schedule.order(items, 2)]
    finally:
        schedule.LONG, schedule.LAST = saved
    assert got == ["l.py::t", "a.py::x", "a.py::y", "m.py::p", "m.py::q", "a.py::z"]
