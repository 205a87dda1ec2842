"""The device code of a CUDA source written for a framework binding (a torch extension's load_inline
string or .cu, pybind11, TVM-FFI): keeps the `__global__` entries the variant YAML names, the
`__device__` / `__host__ __device__` / constexpr functions, constants, types, templates and the
includes NVRTC can compile; drops host functions, framework includes and declarations, binding blocks
(PYBIND11_MODULE, TORCH_LIBRARY, TVM_FFI_...) and the kernels the YAML does not name, and lists each
thing dropped. An entry that is not `extern "C"` gets it; a template entry named with its
instantiation (`entry: k<float, 256>`) becomes a `__device__ __forceinline__` function called by a
generated `extern "C" __global__` wrapper, whose name replaces the entry in the YAML. Text only:
nothing is compiled or run here."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .cxxscan import Item, ScanError, angle_close, idents, items, mask, split_top, strip_template, top_level

FRAMEWORK_INCLUDES = ("torch/", "ATen/", "c10/", "pybind11/", "tvm/", "dlpack/", "Python.h", "cuda_runtime.h",
                      "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h", "vector", "iostream", "string",
                      "cmath", "math.h", "cstdio", "stdio.h", "cstdlib", "stdlib.h", "algorithm", "memory",
                      "stdexcept", "sstream", "cassert", "assert.h", "utility", "tuple", "optional", "functional",
                      "numeric", "map", "unordered_map", "array", "limits", "type_traits")
FRAMEWORK_NAMESPACES = {"torch", "at", "c10", "pybind11", "py", "tvm", "ffi", "std"}
_FRAMEWORK_MACRO = re.compile(r"\b(?:(?:TORCH|AT|C10|PYBIND11|TVM_FFI)_\w+|CHECK_CUDA|CHECK_INPUT|CHECK_CONTIGUOUS)\b")
_FRAMEWORK_QUALIFIED = re.compile(r"\b(?:torch|at|c10|pybind11|py|tvm|ffi)\s*::")
_INCLUDE = re.compile(r"#\s*include\s*[<\"]([^>\"]+)[>\"]")
_ENTRY = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:<(.*)>)?\s*$", re.S)
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\(")
_NOT_A_NAME = {"__restrict__", "restrict", "const", "volatile", "int", "unsigned", "signed", "long", "short", "char",
               "float", "double", "bool", "void", "half", "__half", "__nv_bfloat16", "size_t"}


class ExtractError(ValueError):
    """The source cannot be reduced to device code with the entries the YAML names (a sentence)."""


@dataclass
class Extracted:
    source: str                         # the device code, a header comment first
    entries: dict[str, str]             # the YAML's entry -> the kernel name in the source
    dropped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # what was changed besides dropping


def parse_entry(entry: str) -> tuple[str, list[str] | None]:
    """`k` -> ("k", None); `k<float, 256>` -> ("k", ["float", "256"])."""
    m = _ENTRY.match(entry) if isinstance(entry, str) else None
    if not m:
        raise ExtractError(f"entry {entry!r}: expected a kernel name, or a template's name with its arguments "
                           "(e.g. my_kernel<float, 256>)")
    return m[1], None if m[2] is None else [a.strip() for a in split_top(m[2])]


def needs_intake(text: str, entries: list[str]) -> bool:
    """Whether a .cu source needs extraction: a framework include or binding, a host function, or an
    entry that is a template instantiation or not declared extern "C"."""
    if any("<" in e for e in entries):
        return True
    try:
        code, skel = mask(text)
        top = items(text, skel)
    except ScanError:
        return False                                  # compiled as it is (NVRTC says what is wrong)
    for it in _walk(text, code, skel, top):
        kind, _ = _classify(text, code, skel, it)
        if kind in ("host", "framework", "binding"):
            return True
    names = {n for e in entries for n in [parse_entry(e)[0]]}
    return any(not re.search(r'extern\s+"C"[^;{}]*__global__[^;{}]*\b' + re.escape(n) + r"\s*\(", code)
               and not _in_extern_c_block(code, n) for n in names)


def extract(text: str, entries: list[str], origin: str = "the source", where: str = "") -> Extracted:
    """The device code of text for the YAML's entries (each `name` or `name<args>`). ExtractError if
    an entry is missing, ambiguous, a template named without its arguments (or the reverse), or the
    source is not balanced. origin names the source in messages and the header; where prefixes the
    line numbers of what was dropped."""
    try:
        code, skel = mask(text)
        top = items(text, skel)
    except ScanError as e:
        raise ExtractError(f"{origin}: cannot read the C++ structure: {e}") from None
    wanted = [parse_entry(e) for e in entries]
    out = Extracted("", {})
    kernels: dict[str, list[Item]] = {}
    for it in _walk(text, code, skel, top):
        kind, name = _classify(text, code, skel, it)
        if kind == "kernel":
            kernels.setdefault(name, []).append(it)
    for name, targs in wanted:
        if name not in kernels:
            known = ", ".join(sorted(kernels)) or "none"
            raise ExtractError(f"entry {name!r}: no __global__ function of that name in {origin} (kernels: {known})")
        if len(kernels[name]) > 1:
            raise ExtractError(f"entry {name!r}: {len(kernels[name])} __global__ definitions of that name in {origin} "
                               "(overloads): kreg cannot tell which one is the entry")
    edits: dict[int, tuple[int, str]] = {}      # start -> (end, replacement)
    inserts: dict[int, str] = {}                # position -> text inserted there
    converted: set[str] = set()
    for name, targs in wanted:
        it = kernels[name][0]
        head = code[it.start:it.brace[0]]
        is_template = head.lstrip().startswith("template")
        entry = name if targs is None else f"{name}<{', '.join(targs)}>"
        if targs is None:
            if is_template:
                raise ExtractError(f"entry {name!r} is a template: name its instantiation in the YAML, e.g. "
                                   f"`entry: {name}<{', '.join(_template_params(head)[0]) or '...'}>` with the "
                                   "arguments")
            out.entries[entry] = name
            if not (re.search(r'extern\s+"C"', head) or _in_extern_c_block(code, name)):
                st = re.search(r"\bstatic\b\s*", head)        # extern "C" static is no valid linkage
                if st and st.start() == 0:
                    edits[it.start] = (it.start + st.end(), 'extern "C" ')
                else:
                    edits[it.start] = (it.start, 'extern "C" ')
                    if st:
                        edits[it.start + st.start()] = (it.start + st.end(), "")
                out.notes.append(f'kernel {name}: declared extern "C" (so its PTX entry is named {name})')
            continue
        if not is_template:
            raise ExtractError(f"entry {entry!r}: {name} is not a template; name it without arguments")
        wrapper = _wrapper_name(name, targs, code)
        out.entries[entry] = wrapper
        inserts[it.end] = inserts.get(it.end, "") + _wrapper(text, code, it, name, targs, wrapper)
        out.notes.append(f"kernel {entry}: instantiated by the generated extern \"C\" __global__ {wrapper} "
                         f"(the template is now a __device__ __forceinline__ function it calls)")
        if name not in converted:
            converted.add(name)
            s, e = _global_span(code, it)
            edits[s] = (e, "__device__ __forceinline__")
            for m in _LAUNCH_BOUNDS.finditer(code, it.start, it.brace[0]):
                close = _paren_close(code, m.end() - 1)
                edits[m.start()] = (close + 1, "")
    chosen = {kernels[n][0].start for n, _ in wanted}
    drops: list[tuple[int, int]] = []
    for it in _walk(text, code, skel, top):
        kind, name = _classify(text, code, skel, it)
        why = {"host": f"host function {name}", "framework": f"framework declaration: {name}",
               "binding": f"binding block {name}", "kernel-decl": f"declaration of kernel {name} (for host code)",
               "include": f"#include {name} (a framework or host header)",
               "kernel": None if it.start in chosen else f"kernel {name} (not an entry the YAML names)"}.get(kind)
        if why:
            drops.append((it.start, it.end))
            out.dropped.append(f"{where}{_lines(text, it)}: {why}")
    body = _apply(text, drops, edits, inserts)
    header = [f"// Device code extracted by kreg submit from {_comment(origin)}."]
    header += [f"// dropped {_comment(d)}" for d in out.dropped] + [f"// {_comment(n)}" for n in out.notes]
    out.source = "\n".join(header) + "\n" + body.strip("\n") + "\n"
    return out


def _walk(text, code, skel, top):
    """Every item, the items of namespace and extern "C" blocks recursively (the block itself is kept)."""
    for it in top:
        if it.kind == "decl" and it.brace and _is_block(code[it.start:it.brace[0]]):
            yield from _walk(text, code, skel, items(text, skel, it.brace[0] + 1, it.brace[1] - 1))
        else:
            yield it


def _is_block(head: str) -> bool:
    h = head.strip()
    return bool(re.match(r'^(?:inline\s+)?namespace\b[\w\s:]*$', h) or re.match(r'^extern\s+"C"$', h))


def _classify(text: str, code: str, skel: str, it: Item) -> tuple[str, str]:
    """(kind, name): directive | include | kernel | kernel-decl | device | host | binding | framework | keep."""
    body = code[it.start:it.end]
    if it.kind == "directive":
        d = body.strip()
        m = _INCLUDE.match(d)
        if m and _framework_header(m[1]):
            return "include", f"<{m[1]}>"
        m = re.match(r"#\s*define\s+(\w+)(.*)", d, re.S)
        if m and _mentions_framework(m[2]):
            return "framework", f"#define {m[1]}"
        return "directive", ""
    head = code[it.start:it.brace[0]] if it.brace else body
    bare = strip_template(head)
    toks = idents(top_level(bare))
    fn = _function_name(bare)
    if it.brace and fn is not None and not _is_typedef_or_type(bare):     # a function definition
        if "__global__" in toks:
            return "kernel", fn
        if _FRAMEWORK_MACRO.fullmatch(fn):
            return "binding", fn
        if "__device__" in toks or "constexpr" in toks:
            return "device", fn
        return "host", fn
    if _is_typedef_or_type(bare) or toks[:1] in (["static_assert"], ["typedef"]):
        return ("framework", fn or "") if _mentions_framework(body) else ("keep", "")
    if toks[:2] == ["using", "namespace"]:
        return ("framework", f"using namespace {toks[2]}") if toks[2:3] and toks[2] in FRAMEWORK_NAMESPACES \
            else ("keep", "")
    if toks[:1] == ["namespace"]:                          # an alias: namespace py = pybind11;
        return ("framework", f"namespace {' = '.join(toks[1:3])}") if _mentions_framework(body) or \
            set(toks) & FRAMEWORK_NAMESPACES else ("keep", "")
    if fn is not None and "__global__" in toks:
        return "kernel-decl", fn
    if fn is not None and not ({"__device__", "__constant__", "__shared__", "__managed__"} & set(toks)):
        if _FRAMEWORK_MACRO.fullmatch(fn):
            return "binding", fn
        return "host", fn                                    # a host prototype or a macro invocation
    if _mentions_framework(body):
        return "framework", " ".join(top_level(bare).split())[:80]
    return "keep", ""


def _function_name(head: str) -> str | None:
    """The name before the first top-level `(` of a declaration head if it declares a function (no
    `=` before that paren), else None."""
    depth = 0
    for j, c in enumerate(head):
        if c == "=" and depth == 0:
            return None
        if c == "(" and depth == 0:
            words = idents(head[:j])
            if not words or words[-1] in ("__launch_bounds__", "__align__", "alignas", "decltype", "sizeof",
                                          "static_assert", "__declspec", "__attribute__"):
                if words and words[-1] in ("__launch_bounds__", "__align__", "alignas", "__attribute__"):
                    k = _paren_close(head, j)
                    rest = _function_name(head[k + 1:]) if k > 0 else None
                    return rest
                return None
            return words[-1]
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
    return None


def _is_typedef_or_type(head: str) -> bool:
    return bool(re.match(r"^\s*(?:typedef\b|using\s+\w+\s*=|(?:struct|class|union|enum)\b)", head))


def _mentions_framework(s: str) -> bool:
    return bool(_FRAMEWORK_QUALIFIED.search(s) or _FRAMEWORK_MACRO.search(s))


def _framework_header(name: str) -> bool:
    return any(name.startswith(p) if p.endswith("/") else name == p for p in FRAMEWORK_INCLUDES)


def _define_name(body: str) -> str:
    m = re.match(r"#\s*define\s+(\w+)", body.strip())
    return m[1] if m else ""


def _in_extern_c_block(code: str, name: str) -> bool:
    for m in re.finditer(r'extern\s+"C"\s*\{', code):
        depth, j = 0, m.end() - 1
        for j in range(m.end() - 1, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
        if re.search(r"__global__[^;{}]*\b" + re.escape(name) + r"\s*\(", code[m.end():j]):
            return True
    return False


def _template_params(head: str) -> tuple[list[str], dict[str, str]]:
    """The names of a template's parameters, in order, and the default of each that has one."""
    m = re.match(r"\s*template\s*<", head)
    close = angle_close(head, m.end() - 1)
    names, defaults = [], {}
    for p in split_top(head[m.end():close]):
        if not p.strip():
            continue
        if "..." in p:
            raise ExtractError("a variadic template kernel (a parameter pack) cannot be instantiated from the YAML")
        decl, _, default = p.partition("=")
        words = idents(decl)
        if not words or words[-1] in ("typename", "class") or "template" in words:
            raise ExtractError("a template parameter without a name (or a template template parameter): "
                               "kreg cannot instantiate it")
        names.append(words[-1])
        if default.strip():
            defaults[words[-1]] = default.strip()
    return names, defaults


def _wrapper(text: str, code: str, it: Item, name: str, targs: list[str], wrapper: str) -> str:
    head = code[it.start:it.brace[0]]
    params, defaults = _template_params(head)
    if len(targs) > len(params):
        raise ExtractError(f"entry {name}<...>: {len(targs)} template arguments for {len(params)} parameters")
    binding = dict(zip(params, targs))
    for p in params[len(targs):]:
        if p not in defaults:
            raise ExtractError(f"entry {name}<...>: template parameter {p} has no argument and no default")
        binding[p] = _substitute(defaults[p], binding)
    bare = strip_template(head)
    open_ = _name_paren(bare, name)
    close = _paren_close(bare, open_)
    plist = bare[open_ + 1:close].strip()
    decls, names = [], []
    for k, p in enumerate(split_top(plist) if plist and plist != "void" else []):
        words = idents(p.split("=")[0])
        if len(words) < 2 or words[-1] in _NOT_A_NAME or words[-1] in binding:
            raise ExtractError(f"kernel {name}: parameter {k + 1} has no name; kreg cannot forward it")
        if re.search(r"\[", p):
            raise ExtractError(f"kernel {name}: parameter {words[-1]} is an array; kreg cannot forward it")
        decls.append(_substitute(" ".join(p.split("=")[0].split()), binding))
        names.append(words[-1])
    bounds = ""
    m = _LAUNCH_BOUNDS.search(head)
    if m:
        bounds = _substitute(head[m.start():_paren_close(head, m.end() - 1) + 1], binding) + " "
    args = ", ".join(binding[p] for p in params)
    return (f"\n\n// kreg: the entry {name}<{', '.join(targs)}>\n"
            f'extern "C" __global__ void {bounds}{wrapper}({", ".join(decls)}) {{\n'
            f"    {name}<{args}>({', '.join(names)});\n}}")


def _substitute(s: str, binding: dict[str, str]) -> str:
    """s with each template parameter replaced by its argument (an arithmetic one in parentheses)."""
    def arg(m):
        a = binding.get(m[0])
        if a is None:
            return m[0]
        return f"({a})" if re.fullmatch(r"[\w\s()]*[-+*/%<>|&^?:~][\w\s()+\-*/%<>|&^?:~]*", a) and \
            not re.search(r"[A-Za-z_]", a.replace("u", "").replace("U", "").replace("l", "").replace("L", "")) else a
    return re.sub(r"\b[A-Za-z_]\w*\b", arg, s)


def _wrapper_name(name: str, targs: list[str], code: str) -> str:
    base = re.sub(r"_+", "_", re.sub(r"\W", "_", f"{name}_{'_'.join(targs)}")).strip("_")
    wrapper = base
    while re.search(r"\b" + re.escape(wrapper) + r"\b", code):
        wrapper += "_kreg"
    return wrapper


def _global_span(code: str, it: Item) -> tuple[int, int]:
    m = re.compile(r"\b__global__\b").search(code, it.start, it.brace[0])
    return m.start(), m.end()


def _name_paren(head: str, name: str) -> int:
    m = re.search(r"\b" + re.escape(name) + r"\s*\(", head)
    if not m:
        raise ExtractError(f"kernel {name}: cannot find its parameter list")
    return m.end() - 1


def _paren_close(s: str, i: int) -> int:
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ExtractError("an unclosed parenthesis")


def _apply(text: str, drops, edits, inserts) -> str:
    out, i = [], 0
    marks = sorted([(s, e, "") for s, e in drops] + [(s, e, r) for s, (e, r) in edits.items()]
                   + [(p, p, t) for p, t in inserts.items()], key=lambda m: (m[0], m[1]))
    for s, e, r in marks:
        if s < i:              # inside something dropped
            continue
        out.append(text[i:s])
        out.append(r)
        i = e
    out.append(text[i:])
    return re.sub(r"\n{3,}", "\n\n", "".join(out))


def _lines(text: str, it: Item) -> str:
    a = text.count("\n", 0, it.start) + 1
    b = text.count("\n", 0, it.end) + 1
    return f"line {a}" if a == b else f"lines {a}-{b}"


def _comment(s: str) -> str:
    return s.replace("\n", " ").replace("*/", "* /")
