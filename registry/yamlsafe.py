"""Reading untrusted YAML metadata: a size limit on the file, and a SafeLoader that refuses anchors and
aliases (so a small file cannot expand into gigabytes: the "billion laughs" alias bomb), nesting
deeper than any op or variant needs, and a key given twice in one mapping (YAML would keep the last). Failures are YamlRefused, with a sentence saying why.
Where PyYAML has libyaml, its C scanner and parser read the events (7x faster; the composer, with these checks,
the resolver and the constructor stay PyYAML's own); a document it refuses is read again by the pure-Python
loader, so every refusal and its sentence are that loader's."""
from __future__ import annotations

from pathlib import Path

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent

from .limits import METADATA_MAX_BYTES

MAX_DEPTH = 32


class YamlRefused(ValueError):
    pass


class NoAliasChecks:
    """Composer and constructor checks: no anchors (&a), aliases (*a) or merge keys built from them, a bound
    on nesting (the composer recurses once per level), no key given twice."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            raise YamlRefused(f"YAML aliases (*{event.anchor}) are not allowed in kreg metadata"
                              f"{_line(event)}")
        if isinstance(event, (ScalarEvent, CollectionStartEvent)) and event.anchor is not None:
            raise YamlRefused(f"YAML anchors (&{event.anchor}) are not allowed in kreg metadata{_line(event)}")
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlRefused(f"YAML nested deeper than {MAX_DEPTH} levels{_line(event)}")
            return Composer.compose_node(self, parent, index)
        finally:
            self._depth -= 1


    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:          # an unhashable key: the constructor says so below
                continue
            if first is not key_node:
                raise YamlRefused(f"key {key!r} is given twice in one mapping (lines "
                                  f"{first.start_mark.line + 1} and {key_node.start_mark.line + 1}): "
                                  "kreg refuses duplicate keys rather than keep either")
        return SafeConstructor.construct_mapping(self, node, deep=deep)


class NoAliasLoader(NoAliasChecks, yaml.SafeLoader):
    """yaml.SafeLoader with the checks, all in Python."""


if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser

    class FastNoAliasLoader(NoAliasChecks, Composer, CParser, SafeConstructor, yaml.resolver.Resolver):
        """The same loader over libyaml's events: PyYAML's composer (first in the order, before CParser's
        own), its resolver and constructor."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
else:
    FastNoAliasLoader = None


def _line(event) -> str:
    mark = getattr(event, "start_mark", None)
    return f" (line {mark.line + 1})" if mark else ""


def load_metadata(path: Path):
    """The YAML document at path. Raises OSError or UnicodeDecodeError if it cannot be read, YamlRefused
    if it is too large or uses anchors or aliases, yaml.YAMLError if it is not valid YAML."""
    path = Path(path)
    if path.is_symlink():
        raise YamlRefused("metadata file is a symbolic link (submit the file itself)")
    if not path.is_file():
        raise YamlRefused("not a regular file")
    with open(path, "rb") as f:
        raw = f.read(METADATA_MAX_BYTES + 1)
    if len(raw) > METADATA_MAX_BYTES:
        raise YamlRefused(f"metadata file larger than {METADATA_MAX_BYTES} bytes")
    text = raw.decode("utf-8")
    if FastNoAliasLoader is not None:
        try:
            return yaml.load(text, Loader=FastNoAliasLoader)
        except (yaml.YAMLError, ValueError):
            pass                       # read again below: the refusal, and its sentence, are the Python loader's
    try:
        return yaml.load(text, Loader=NoAliasLoader)
    except ValueError as e:           # e.g. an integer literal with more digits than Python converts
        if isinstance(e, YamlRefused):
            raise
        raise YamlRefused(f"a value cannot be read: {e}") from None
