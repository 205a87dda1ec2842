"""A submitted source as kreg compiles it: a clean .cu as it is; a Python file's load_inline
`cuda_sources` (pyinline, read with `ast`, never run) or a .cu written for a torch / pybind11 / TVM-FFI
binding reduced to its device code (extract), the YAML's template entries (`k<float, 256>`) replaced
by the names of the generated extern "C" wrappers. Says what was dropped and what was changed."""
from __future__ import annotations

from dataclasses import dataclass, field

from .extract import ExtractError, extract, needs_intake, parse_entry
from .pyinline import InlineError, cuda_source

PYTHON_SUFFIXES = (".py",)


class IntakeError(ValueError):
    """Why the source cannot be taken (a sentence)."""


@dataclass
class Intake:
    source: str                  # the CUDA C++ source to stage
    data: dict                   # the YAML, its entries renamed where a wrapper was generated
    form: str = "cuda"           # cuda | cuda+binding | load_inline
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    entries: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"form": self.form, "dropped": self.dropped, "changed": self.notes, "entries": self.entries}


def entries_of(data: dict) -> list[str]:
    """The `entry` of each launch of a variant YAML (strings only; the schema judges the rest)."""
    launches = data.get("launches") if isinstance(data.get("launches"), list) else [data]
    return [ln["entry"] for ln in launches if isinstance(ln, dict) and isinstance(ln.get("entry"), str)]


def take(text: str, data: dict, filename: str) -> Intake:
    """The source to stage and its YAML; IntakeError if the source cannot be reduced to device code."""
    entries = entries_of(data)
    try:
        if filename.endswith(PYTHON_SUFFIXES):
            inline = cuda_source(text, [parse_entry(e)[0] for e in entries], filename)
            got = extract(inline.cuda, entries, f"the cuda_sources of {filename} (load_inline at line "
                          f"{inline.call_line})", where="cuda_sources ")
            return Intake(got.source, _renamed(data, got.entries), "load_inline", inline.dropped + got.dropped,
                          got.notes, got.entries)
        if not needs_intake(text, entries):
            return Intake(text, data)
        got = extract(text, entries, filename)
    except (InlineError, ExtractError) as e:
        raise IntakeError(str(e)) from None
    return Intake(got.source, _renamed(data, got.entries), "cuda+binding", got.dropped, got.notes, got.entries)


def _renamed(data: dict, names: dict[str, str]) -> dict:
    def one(ln):
        return ln | {"entry": names.get(ln["entry"], ln["entry"])} if isinstance(ln, dict) and \
            isinstance(ln.get("entry"), str) else ln
    if isinstance(data.get("launches"), list):
        return data | {"launches": [one(ln) for ln in data["launches"]]}
    return one(data)
