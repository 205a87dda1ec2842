"""The CUDA source of a Python file that builds it with torch.utils.cpp_extension.load_inline, read as
text and parsed with `ast` (never imported, never run): the `cuda_sources` argument of the
load_inline call, where it is a string constant, a module-level name bound once to one, a `+`
concatenation or list of those (textwrap.dedent / .strip() of one are whitespace and taken as is).
Anything computed at run time (an f-string, %, .format(), a file read) is refused with a sentence.
`cpp_sources` is host code (the declarations pybind11 binds) and is reported as dropped."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass


class InlineError(ValueError):
    """The file's CUDA source cannot be read without running it (a sentence)."""


@dataclass
class InlineSource:
    cuda: str              # the cuda_sources text, joined
    call_line: int         # the load_inline call it came from
    dropped: list[str]     # what of the file is not device code


def cuda_source(text: str, entry_names: list[str], origin: str = "the file") -> InlineSource:
    """The cuda_sources of the one load_inline call whose source defines the YAML's entries (by name)."""
    try:
        tree = ast.parse(text, filename=origin)
    except SyntaxError as e:
        raise InlineError(f"{origin}: not valid Python (line {e.lineno}): kreg reads a load_inline file as text "
                          "and needs it to parse") from None
    names = _module_strings(tree)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_load_inline(n.func)]
    if not calls:
        raise InlineError(f"{origin}: no torch.utils.cpp_extension.load_inline call: kreg takes a Python file "
                          "only for the CUDA source it passes to load_inline (or submit the .cu)")
    found = []
    for call in calls:
        arg = _argument(call, "cuda_sources", 2)
        if arg is None:
            continue
        cuda = _string(arg, names, "cuda_sources", call.lineno)
        if not entry_names or all(_defines(cuda, n) for n in entry_names):
            found.append((call, cuda))
    if not found:
        want = ", ".join(entry_names) or "the entry"
        raise InlineError(f"{origin}: no load_inline call's cuda_sources defines {want}")
    if len(found) > 1:
        raise InlineError(f"{origin}: {len(found)} load_inline calls (lines "
                          f"{', '.join(str(c.lineno) for c, _ in found)}) define the entry: keep one per file")
    call, cuda = found[0]
    dropped = [f"the Python code around the load_inline call at line {call.lineno} (read, never run)"]
    if _argument(call, "cpp_sources", 1) is not None:
        dropped.append("cpp_sources (host declarations for the C++ compiler)")
    return InlineSource(cuda, call.lineno, dropped)


def _is_load_inline(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "load_inline") or \
        (isinstance(func, ast.Attribute) and func.attr == "load_inline")


def _argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == keyword:
            return k.value
    return call.args[position] if len(call.args) > position else None


def _module_strings(tree: ast.Module) -> dict[str, ast.expr | None]:
    """Names bound anywhere in the file: name -> its value where the one binding is a module-level
    `name = value` (or `name: T = value`), else None (bound twice, or by a for, an augmented assignment,
    an import, a def, inside a function ...)."""
    count: dict[str, int] = {}
    for node in ast.walk(tree):
        bound = []
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            bound = [node.target.id, node.target.id]          # its Name is walked too: never once
        for n in bound:
            count[n] = count.get(n, 0) + 1
    out: dict[str, ast.expr | None] = dict.fromkeys(count)
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and count.get(target.id) == 1:
            out[target.id] = value
    return out


def _string(node: ast.expr, names: dict, what: str, line: int, depth: int = 0) -> str:
    if depth > 50:
        raise InlineError(f"line {line}: {what} refers to itself")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise InlineError(f"line {line}: {what} is the name {node.id!r}, which is not bound to a string at "
                              "module level")
        if names[node.id] is None:
            raise InlineError(f"line {line}: {what} is the name {node.id!r}, which is bound more than once (or not "
                              "by a plain assignment): kreg reads only a name bound once to a string")
        return _string(names[node.id], names, what, line, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _string(node.left, names, what, line, depth + 1) + _string(node.right, names, what, line, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple)):
        return "\n".join(_string(e, names, what, line, depth + 1) for e in node.elts)
    if isinstance(node, ast.Call) and not node.keywords:
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in ("dedent", "strip", "lstrip", "rstrip") and \
                (f.attr == "dedent" and len(node.args) == 1 or f.attr != "dedent" and not node.args):
            inner = node.args[0] if f.attr == "dedent" else f.value
            if f.attr != "dedent" or (isinstance(f.value, ast.Name) and f.value.id == "textwrap"):
                return _string(inner, names, what, line, depth + 1)      # whitespace only: C++ is the same
    kind = {ast.JoinedStr: "an f-string", ast.Call: "a call", ast.BinOp: "an expression"}.get(type(node), "an expression")
    raise InlineError(f"line {getattr(node, 'lineno', line)}: {what} is {kind}, computed when the file runs: "
                      "kreg reads string constants only (write the CUDA source as a string, or submit the .cu)")


def _defines(cuda: str, name: str) -> bool:
    return re.search(r"__global__[^;{}]*\b" + re.escape(name) + r"\s*\(", cuda) is not None
