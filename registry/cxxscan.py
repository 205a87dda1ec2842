"""A brace- and paren-aware scanner of CUDA C++ source text (no preprocessing, no parsing of types): the
top-level items of a source or of a block's body, each a preprocessor line or a declaration (ending
at its `;`, or at the `}` of a function, namespace or `extern "C"` body), with comments, string and
character literals (raw strings included) and backslash-continued directive lines handled. Positions
index the original text, so an item's text is a slice of it."""
from __future__ import annotations

import re
from dataclasses import dataclass

_IDENT = re.compile(r"[A-Za-z_]\w*")
_RAW = re.compile(r'(?:u8|[uUL])?R"([^()\\ \t\n]{0,16})\(')
_TYPE_HEAD = re.compile(r"^(?:typedef\s+)?(?:struct|class|union|enum)\b")


class ScanError(ValueError):
    """The source is not balanced (an unclosed brace, paren, comment or literal)."""


def mask(text: str) -> tuple[str, str]:
    """(code, skeleton), both as long as text: code has every comment blanked (newlines kept);
    skeleton also blanks the contents of string and character literals (their quotes kept), so braces,
    parens and semicolons in it are the program's own."""
    code, skel = list(text), list(text)
    i, n = 0, len(text)

    def blank(a, b, both=True):
        for k in range(a, b):
            if text[k] != "\n":
                skel[k] = " "
                if both:
                    code[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = i
            while j < n and text[j] != "\n":        # a comment continued by a backslash-newline goes on
                j = j + 2 if text[j] == "\\" and text[j + 1:j + 2] == "\n" else j + 1
            blank(i, j)
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ScanError("an unclosed /* comment")
            blank(i, j + 2)
            i = j + 2
        elif c in "uULR" and (m := _RAW.match(text, i)) and (i == 0 or not _word(text[i - 1])):
            end = text.find(")" + m[1] + '"', m.end())
            if end < 0:
                raise ScanError("an unclosed raw string literal")
            blank(m.end(), end, both=False)
            i = end + len(m[1]) + 2
        elif c == '"' or (c == "'" and not (i and _word(text[i - 1]))):   # 1'000 is a digit separator
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\n":
                    raise ScanError("a string or character literal that does not end on its line")
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise ScanError("an unclosed string or character literal")
            blank(i + 1, j, both=False)
            i = j + 1
        else:
            i += 1
    return "".join(code), "".join(skel)


@dataclass(frozen=True)
class Item:
    kind: str                          # "directive" or "decl"
    start: int
    end: int                           # text[start:end] is the item
    brace: tuple[int, int] | None = None   # for a decl: its first top-level { ... } (both braces included)

    def text(self, src: str) -> str:
        return src[self.start:self.end]


def items(text: str, skel: str, start: int = 0, end: int | None = None) -> list[Item]:
    """The top-level items of skel[start:end] (a whole source, or the inside of a block)."""
    end = len(skel) if end is None else end
    out: list[Item] = []
    i, depth, first, brace, line_start = start, 0, None, None, True
    while i < end:
        c = skel[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" and line_start and depth == 0:
            j = i
            while j < end and skel[j] != "\n":
                j = j + 2 if skel[j] == "\\" and skel[j + 1:j + 2] == "\n" else j + 1
            out.append(Item("directive", i, j))
            i = j
            continue
        line_start = False
        if first is None:
            first = i
        if c in "([{":
            if c == "{" and depth == 0 and brace is None:
                brace = i
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                raise ScanError(f"an unmatched {c!r} at line {text.count(chr(10), 0, i) + 1}")
            if c == "}" and depth == 0 and i > (brace or 0) and _ends_at_brace(skel[first:brace]):
                out.append(Item("decl", first, i + 1, (brace, i + 1)))
                first, brace = None, None
        elif c == ";" and depth == 0:
            out.append(Item("decl", first, i + 1, None if brace is None else (brace, _close(skel, brace))))
            first, brace = None, None
        i += 1
    if depth or first is not None:
        raise ScanError("the source ends inside a declaration (an unclosed brace or a missing ';')")
    return out


def _ends_at_brace(head: str) -> bool:
    """A `}` closing the first top-level brace ends the item unless the head is a type definition or an
    initialiser (`struct S {...};`, `int t[] = {...};`), which go on to their `;`."""
    h = strip_template(head.strip())
    return not (_TYPE_HEAD.match(h) or "=" in top_level(head))


def top_level(s: str) -> str:
    """s with everything inside parens, brackets and braces removed."""
    out, depth = [], 0
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def strip_template(head: str) -> str:
    """head without a leading `template <...>` (nested angle brackets balanced)."""
    m = re.match(r"\s*template\s*<", head)
    if not m:
        return head
    j = angle_close(head, m.end() - 1)
    return head[j + 1:].lstrip() if j >= 0 else head


def angle_close(s: str, i: int) -> int:
    """The index of the `>` matching the `<` at s[i] (parens nest too), or -1."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] in "<(":
            depth += 1
        elif s[j] in ">)":
            depth -= 1
            if depth == 0:
                return j
    return -1


def split_top(s: str, sep: str = ",") -> list[str]:
    """s split at sep outside (), [], {} and <>."""
    parts, depth, last = [], 0, 0
    for j, c in enumerate(s):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(s[last:j])
            last = j + 1
    parts.append(s[last:])
    return parts


def _close(skel: str, i: int) -> int:
    depth = 0
    for j in range(i, len(skel)):
        if skel[j] in "([{":
            depth += 1
        elif skel[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ScanError("an unclosed brace")


def idents(s: str) -> list[str]:
    return _IDENT.findall(s)


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"
