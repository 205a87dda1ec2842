"""The catalog of ops and variants: the built-in kernels/ tree plus the user store ($KREG_HOME, default
~/.kreg), validated, each variant identified by the sha256 of its source, metadata and compile options."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .schema import Op, SchemaError, Variant, load_op, load_variant
from .source_policy import kreg_includes

BUILTIN = Path(__file__).resolve().parent.parent / "kernels"


def home() -> Path:
    return Path(os.environ.get("KREG_HOME", Path.home() / ".kreg"))


HOME_FOLDERS = ("kernels", "kernels/ops", "kernels/safe", "kernels/unsafe", "tmp", "cache", "cache/ptx")


class HomeEscape(OSError):
    """A path kreg would write resolves outside $KREG_HOME (a folder of it is a symbolic link out)."""


def confined(path: str | Path) -> Path:
    """path resolved, if it lies inside $KREG_HOME (itself resolved: a KREG_HOME that is a link is
    fine); else HomeEscape, with a sentence naming the path and where it leads."""
    root = home().resolve()
    real = Path(path).resolve()
    if real != root and root not in real.parents:
        raise HomeEscape(f"{path} leads to {real}, outside $KREG_HOME ({root}): a folder of $KREG_HOME is a "
                         "symbolic link out of it, and kreg writes only inside $KREG_HOME (replace the link "
                         "with a folder)")
    return real


def check_home() -> None:
    """HomeEscape if any folder kreg writes in (or the results store) leads outside $KREG_HOME."""
    h = home()
    paths = [h / f for f in HOME_FOLDERS] + [h / f"results.sqlite{x}" for x in ("", "-wal", "-shm")]
    for safety in ("safe", "unsafe"):
        d = h / "kernels" / safety
        if d.is_dir() and not d.is_symlink():
            paths += sorted(d.iterdir())
    for p in paths:
        if os.path.lexists(p):
            confined(p)


def include_bytes(source: str | None = None) -> bytes:
    """The project's own headers (kernels/include) that belong to a kernel's identity: those the source
    includes (directly or through each other), or all of them when no source is given or its includes
    are not known (a source the policy refuses)."""
    names = kreg_includes(source) if source is not None else None
    return b"".join(p.name.encode() + p.read_bytes() for p in sorted((BUILTIN / "include").glob("*"))
                    if p.is_file() and (names is None or p.name in names))


def variant_hash(v: Variant) -> str:
    meta = json.dumps(v.raw, sort_keys=True, default=str).encode()
    if v.vendor:
        return hashlib.sha256(b"\0kreg\0".join([b"vendor:" + v.library.encode(), meta])).hexdigest()
    source = v.source_path.read_bytes()
    parts = [source, meta, json.dumps(list(v.options)).encode(), include_bytes(source.decode("utf-8", "replace"))]
    return hashlib.sha256(b"\0kreg\0".join(parts)).hexdigest()


@dataclass
class Entry:
    variant: Variant
    hash: str
    origin: str          # "builtin" or "user"

    @property
    def op(self):
        return self.variant.op

    @property
    def name(self):
        return self.variant.name


@dataclass
class Catalog:
    ops: dict[str, Op] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    errors: list[SchemaError] = field(default_factory=list)

    @property
    def kernels(self) -> list[Entry]:
        """The variants with a source (everything but vendor library routines)."""
        return [e for e in self.entries if not e.variant.vendor]

    def find(self, key: str) -> Entry:
        """A variant by name, op/name, or a hash prefix of at least 8 characters."""
        hits = [e for e in self.entries if key in (e.name, f"{e.op}/{e.name}")
                or (len(key) >= 8 and e.hash.startswith(key))]
        if not hits:
            raise KeyError(f"no variant {key!r} (try `kreg list`)")
        if len(hits) > 1:
            raise KeyError(f"{key!r} is ambiguous: " + ", ".join(f"{e.op}/{e.name}" for e in hits))
        return hits[0]


def roots() -> list[tuple[str, Path]]:
    user = home() / "kernels"
    return [("builtin", BUILTIN)] + ([("user", user)] if user.is_dir() else [])


def load_catalog() -> Catalog:
    cat = Catalog()
    for _, root in roots():
        for p in sorted((root / "ops").glob("*.yaml")):
            try:
                op = load_op(p)
            except SchemaError as e:
                cat.errors.append(e)
                continue
            if op.name in cat.ops:
                cat.errors.append(SchemaError(p, "op", f"op {op.name!r} is already defined in {cat.ops[op.name].path}"))
                continue
            cat.ops[op.name] = op
    seen: dict[tuple[str, str], str] = {}
    builtin_names: dict[str, str] = {}      # name -> op: never shadowed by a user variant
    for origin, root in roots():
        for safety in ("safe", "unsafe") + (("vendor",) if origin == "builtin" else ()):   # never submitted
            for p in sorted((root / safety).glob("*/*.yaml")):
                try:
                    v = load_variant(p, cat.ops)
                    if v.safety != safety:
                        raise SchemaError(p, "safety", f"a variant under {safety}/ must say safety: {safety}")
                    if p.parent.name != v.op:
                        raise SchemaError(p, "op", f"lives in folder {p.parent.name!r} but names op {v.op!r}")
                    if (v.op, v.name) in seen:
                        raise SchemaError(p, "name", f"variant {v.op}/{v.name} already defined in {seen[(v.op, v.name)]}")
                    if origin == "user" and v.name in builtin_names:
                        raise SchemaError(p, "name", f"{v.name!r} is the name of the built-in variant "
                                          f"{builtin_names[v.name]}/{v.name}: a user variant cannot take it "
                                          "under any op (rename it)")
                except SchemaError as e:
                    cat.errors.append(e)
                    continue
                seen[(v.op, v.name)] = str(p)
                if origin == "builtin":
                    builtin_names.setdefault(v.name, v.op)
                cat.entries.append(Entry(v, variant_hash(v), origin))
    return cat
