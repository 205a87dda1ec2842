"""Text that came from outside kreg (a kernel's metadata or source, a compiler log, a model folder, a
path, generated text) as the terminal shows it: control characters (C0, DEL, C1) and the Unicode
bidirectional overrides escaped as visible \\x.. / \\u.... sequences, so an escape sequence never runs;
`markup()` also escapes rich markup, so a `[/red]` is shown as text and never parsed."""
from __future__ import annotations

import re

from rich.markup import escape

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_NL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")   # also \t, \n


def _visible(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def plain(text: object, *, lines: bool = False) -> str:
    """str(text) with every control character escaped (newlines and tabs kept if lines)."""
    return (_CONTROL if lines else _CONTROL_NL).sub(_visible, str(text))


def markup(text: object, *, lines: bool = False) -> str:
    """plain(text), safe to put inside a rich markup string (its brackets escaped)."""
    return escape(plain(text, lines=lines))
