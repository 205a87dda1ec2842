"""The user's own float64 references, for ops defined outside kreg ($KREG_HOME/kernels/ops/*.yaml):
the modules $KREG_HOME/references/*.py and the entry points of group `kreg.ops` that an installed
package declares, imported the first time an op names a reference kreg does not have. This is the
user's trusted code, imported deliberately (a submitted kernel never is). A module registers its
functions with @reference / @error_scale (conformance.references); an entry point that names a
function registers it under the entry point's name. A name taken by a built-in reference is refused."""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
from importlib.metadata import entry_points
from pathlib import Path

from .references import ERROR_SCALES, REFERENCES

GROUP = "kreg.ops"
_lock = threading.Lock()
_loaded: dict[str, list[str]] = {}      # KREG_HOME -> the problems met loading its plug-ins


def reference_for(name: str):
    """The float64 reference named name: built in, else from the user's plug-ins. KeyError with a
    sentence (where kreg looked, and what failed to load) if there is none."""
    fn = REFERENCES.get(name)
    if fn is None:
        problems = load_plugins()
        fn = REFERENCES.get(name)
        if fn is None:
            raise KeyError(f"no float64 reference named {name!r}: not built in, not registered by a module in "
                           f"{_folder()} nor by a `{GROUP}` entry point" + "".join(f"; {p}" for p in problems))
    return fn


def error_scale_for(name: str):
    """The error scale (sum of absolute terms) registered for a reference, or None."""
    if name not in ERROR_SCALES:
        load_plugins()
    return ERROR_SCALES.get(name)


def load_plugins() -> list[str]:
    """Import the user's references once per $KREG_HOME; the problems met (a module that failed to
    import, a name already taken), as sentences."""
    home = str(_folder())
    with _lock:
        if home in _loaded:
            return _loaded[home]
        problems: list[str] = []
        for path in sorted(Path(home).glob("*.py")) if Path(home).is_dir() else []:
            _guarded(problems, str(path), lambda p=path: _import_file(p))
        try:
            eps = list(entry_points(group=GROUP))
        except Exception as e:            # a broken distribution's metadata
            eps, _ = [], problems.append(f"reading the `{GROUP}` entry points failed: {type(e).__name__}: {e}")
        for ep in eps:
            _guarded(problems, f"entry point {ep.name} = {ep.value}", lambda ep=ep: _register_entry_point(ep))
        _loaded[home] = problems
        return problems


def _folder() -> Path:
    return Path(os.environ.get("KREG_HOME", Path.home() / ".kreg")) / "references"


def _guarded(problems: list[str], what: str, load) -> None:
    before = dict(REFERENCES), dict(ERROR_SCALES)
    try:
        load()
    except Exception as e:
        REFERENCES.clear(), REFERENCES.update(before[0])       # nothing half-registered stays
        ERROR_SCALES.clear(), ERROR_SCALES.update(before[1])
        problems.append(f"loading {what} failed: {type(e).__name__}: {e}")


def _import_file(path: Path) -> None:
    name = f"kreg_user_references.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def _register_entry_point(ep) -> None:
    obj = ep.load()
    if callable(obj) and not isinstance(obj, type):
        if REFERENCES.get(ep.name, obj) is not obj:
            raise ValueError(f"a float64 reference named {ep.name!r} is already registered")
        REFERENCES[ep.name] = obj
