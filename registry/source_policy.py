"""What CUDA source kreg agrees to compile: at most SOURCE_MAX_BYTES, and `#include` only of the kreg
headers (kernels/include: its .cuh files and its small stand-ins for the C headers NVRTC lacks,
<stdint.h>/<cstdint>, <float.h>/<cfloat>, <limits.h>/<climits>) and of the CUDA headers that ship with
NVRTC's runtime wheel (cuda_fp16.h, cuda_bf16.h, cuda_pipeline.h, ...), named by a plain relative path. Anything else (an absolute path,
`..`, a macro, an unknown file) is refused, and the refused name is never echoed back: a submission
must not be able to make kreg read, or print, a file of the host."""
from __future__ import annotations

import bisect
import re
from functools import cache, lru_cache
from pathlib import Path

from .limits import SOURCE_MAX_BYTES

KREG_INCLUDE_DIR = Path(__file__).resolve().parent.parent / "kernels" / "include"
OUTSIDE = ("an include outside the kreg headers (kernels/include/*.cuh) and the CUDA headers NVRTC ships "
           "(cuda_fp16.h, cuda_bf16.h, ...)")
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")      # matched whole (fullmatch)
_DIRECTIVE = re.compile(r"^[ \t\f\v]*(?:#|%:)[ \t\f\v]*([A-Za-z_]\w*)(.*)$", re.M)
_HAS_INCLUDE = re.compile(r"__has_include(?:_next)?\b\s*(\(\s*(?:<[^<>\n]*>|\"[^\"\n]*\")\s*\))?")
_HEADER = re.compile(r"^\s*(<([^<>\n]*)>|\"([^\"\n]*)\")\s*$")
INCLUDE_DIRECTIVES = ("include", "include_next", "import")
_LENIENT = re.compile(r"^[ \t\f\v]*(?:#|%:)(?:\s|/\*[\s\S]*?\*/)*(?:include_next|include|import)\b(.*)$", re.M)
_SPLICE = re.compile(r"\\[ \t\f\v]*\r?\n")
_NAIVE_COMMENT = re.compile(r"/\*.*?\*/|//.*$")
_SPECIAL = re.compile(r"[\"'/uULR]")
_RAW_PREFIX = re.compile(r'(?<![A-Za-z0-9_])(?:u8|[uUL])?R"([^()\\ \t\n]{0,16})\(')


@lru_cache(maxsize=512)
def source_problem(text: str) -> str | None:
    """Why this source is refused, or None. The sentence never quotes the source. (A function of the text
    and of the header folders, whose listings are cached below: so cached by text, as a catalog asks of
    every variant twice and variants share sources.)"""
    if len(text.encode("utf-8", "replace")) > SOURCE_MAX_BYTES:
        return f"source larger than {SOURCE_MAX_BYTES} bytes (1 MiB)"
    if "\0" in text:
        return "source contains a NUL byte"
    if "??=" in text:
        return "source contains a trigraph (??=)"
    spliced, splices = _splice(text)
    code, comments = _strip_comments(spliced)
    found = [(_back(m.start(), comments), m[2]) for m in _DIRECTIVE.finditer(code) if m[1] in INCLUDE_DIRECTIVES]
    # and a lenient scan of the text with its comments, in case the lexer above misread a literal
    found += [(m.start(), _NAIVE_COMMENT.sub(" ", m[1])) for m in _LENIENT.finditer(spliced)]
    found += [(_back(m.start(), comments), m[1][1:-1] if m[1] else "") for m in _HAS_INCLUDE.finditer(code)]
    for pos, rest in sorted(found):
        h = _HEADER.match(rest)
        if not h or not allowed_header(h[2] if h[2] is not None else h[3]):
            return f"line {text.count(chr(10), 0, _back(pos, splices)) + 1}: {OUTSIDE}"
    return None


def kreg_includes(text: str) -> frozenset[str] | None:
    """The kreg headers this source can pull in, directly or through each other (every include that
    names one, in code or in a comment: a superset); None if the source breaks the policy (then no
    set of headers is known to be complete)."""
    if source_problem(text):
        return None
    seen, todo = set(), [text]
    while todo:
        for m in _LENIENT.finditer(_splice(todo.pop())[0]):
            h = _HEADER.match(_NAIVE_COMMENT.sub(" ", m[1]))
            name = h and (h[2] if h[2] is not None else h[3])
            if name in kreg_headers() and name not in seen:
                seen.add(name)
                todo.append((KREG_INCLUDE_DIR / name).read_text())
    return frozenset(seen)


def allowed_header(name: str) -> bool:
    """A plain relative path naming a kreg header or a file of the CUDA headers' folder."""
    parts = name.split("/")
    if not name or len(name) > 200 or not all(_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts):
        return False
    return name in kreg_headers() or _in_cuda_headers(name)


STANDARD_STAND_INS = ("stdint.h", "cstdint", "float.h", "cfloat", "limits.h", "climits")


@cache
def kreg_headers() -> frozenset[str]:
    return frozenset(p.name for p in KREG_INCLUDE_DIR.iterdir() if p.is_file() and
                     (p.suffix == ".cuh" or p.name in STANDARD_STAND_INS))


@cache
def _in_cuda_headers(name: str) -> bool:
    import cuda.pathfinder as pf
    found = pf.find_nvidia_header_directory("cudart")
    if not found:
        return False
    root = Path(found).resolve()
    p = (root / name).resolve()
    return p.is_file() and p.is_relative_to(root)


def _splice(text: str) -> tuple[str, list]:
    """Phase 2: backslash-newline pairs removed; and the marks that map positions back (_back)."""
    out, marks, last, o = [], [(0, 0)], 0, 0
    for m in _SPLICE.finditer(text):
        out.append(text[last:m.start()])
        o += m.start() - last
        last = m.end()
        marks.append((o, last))
    out.append(text[last:])
    return "".join(out), marks


def _strip_comments(text: str) -> tuple[str, list]:
    """Phase 3: every comment replaced by one space; string and character literals (raw strings
    included) kept, so a comment marker inside one is no comment. And the marks for _back."""
    out, marks, i, o, n = [], [(0, 0)], 0, 0, len(text)
    while i < n:
        m = _SPECIAL.search(text, i)
        j = n if m is None else m.start()
        out.append(text[i:j])
        o += j - i
        i = j
        if i >= n:
            break
        c = text[i]
        if text.startswith("//", i) or text.startswith("/*", i):
            k = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2)
            i = n if k < 0 else (k if text[i + 1] == "/" else k + 2)
            out.append(" ")
            o += 1
            marks.append((o, i))
            continue
        if c in "uULR" and (r := _RAW_PREFIX.match(text, i)) and (i == 0 or not _ident(text[i - 1])):
            end = text.find(")" + r[1] + '"', r.end())
            j = n if end < 0 else end + len(r[1]) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            j = i + 1
        out.append(text[i:j])
        o += j - i
        i = j
    return "".join(out), marks


def _back(pos: int, marks: list) -> int:
    """A position in a transformed text, as a position in the text before the transformation."""
    k = bisect.bisect_right(marks, (pos, float("inf"))) - 1
    return marks[k][1] + pos - marks[k][0]


def _ident(c: str) -> bool:
    return c.isalnum() or c == "_"
