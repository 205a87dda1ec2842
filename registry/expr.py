"""Integer expressions over dims (launch geometry, shapes, requirements), parsed into a tiny AST.

Grammar: integers, names, unary -, + - * // %, cdiv(a, b), min(a, ...), max(a, ...), parentheses;
a condition is one comparison (== != < <= > >=) or several joined by `and` / `or`. Python's `ast`
module only tokenises the text; nothing is ever evaluated by Python itself.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .limits import EXPR_MAX_ABS

BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
FUNCS = {"cdiv": 2, "min": None, "max": None}
MAX_LEN = 500


class ExprError(ValueError):
    pass


@dataclass(frozen=True)
class Expr:
    """A parsed expression: ('int', v) | ('name', n) | ('neg', e) | (op, a, b) | ('call', f, args...)
    | ('cmp', op, a, b) | ('and'|'or', a, b...)."""
    text: str
    tree: tuple

    def names(self) -> set[str]:
        out: set[str] = set()

        def walk(t):
            if t[0] == "name":
                out.add(t[1])
            for x in t[1:]:
                if isinstance(x, tuple):
                    walk(x)
        walk(self.tree)
        return out

    def __call__(self, env: dict[str, int]) -> int | bool:
        try:
            return evaluate(self.tree, env)
        except ExprError as e:
            raise ExprError(f"{e} in {self.text!r} at {_env_text(self, env)}") from None

    def __str__(self) -> str:
        return self.text


def _convert(node: ast.AST, cond: bool) -> tuple:
    if isinstance(node, ast.BoolOp) and cond:
        op = "and" if isinstance(node.op, ast.And) else "or"
        return (op, *(_convert(v, True) for v in node.values))
    if isinstance(node, ast.Compare) and cond:
        if len(node.ops) != 1:
            raise ExprError("chained comparisons are not allowed; join them with `and`")
        op = CMPOPS.get(type(node.ops[0]))
        if op is None:
            raise ExprError(f"comparison {type(node.ops[0]).__name__} is not allowed")
        return ("cmp", op, _convert(node.left, False), _convert(node.comparators[0], False))
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return ("int", node.value)
    if isinstance(node, ast.Name):
        return ("name", node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return ("neg", _convert(node.operand, False))
    if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
        return (BINOPS[type(node.op)], _convert(node.left, False), _convert(node.right, False))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCS:
        if node.keywords:
            raise ExprError(f"{node.func.id}() takes no keyword arguments")
        want = FUNCS[node.func.id]
        n = len(node.args)
        if (want is not None and n != want) or n == 0:
            raise ExprError(f"{node.func.id}() takes {want or 'at least 1'} argument(s), got {n}")
        return ("call", node.func.id, *(_convert(a, False) for a in node.args))
    what = type(node).__name__
    if isinstance(node, ast.Constant):
        what = f"constant {node.value!r}"
    elif isinstance(node, ast.Call):
        what = f"call of {ast.unparse(node.func)!r}"
    elif isinstance(node, (ast.BinOp, ast.UnaryOp)):
        what = f"operator {type(node.op).__name__}"
    elif isinstance(node, (ast.Compare, ast.BoolOp)):
        what = "a condition where a number is expected"
    raise ExprError(f"{what} is not allowed (integers, dims, + - * // %, cdiv, min, max)")


def _parse(text, cond: bool) -> Expr:
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ExprError(f"expected an expression (string or integer), got {type(text).__name__}")
    text = str(text).strip()
    if not text:
        raise ExprError("empty expression")
    if len(text) > MAX_LEN:
        raise ExprError(f"expression longer than {MAX_LEN} characters")
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError as e:
        raise ExprError(f"cannot parse {text!r}: {e.msg}") from None
    return Expr(text, _convert(node, cond))


def parse(text) -> Expr:
    """An integer expression."""
    return _parse(text, cond=False)


def parse_condition(text) -> Expr:
    """A condition: comparisons joined by and/or."""
    e = _parse(text, cond=True)
    if e.tree[0] not in ("cmp", "and", "or"):
        raise ExprError(f"{text!r} is not a condition (expected a comparison such as `N % 2 == 0`)")
    return e


def _env_text(e: Expr, env: dict[str, int]) -> str:
    names = sorted(e.names() & set(env))
    return "{" + ", ".join(f"{n}: {env[n]}" for n in names) + "}"


def _floordiv(a: int, b: int, what: str = "division") -> int:
    if b == 0:
        raise ExprError(f"{what} by zero")
    return a // b


def _bounded(v):
    if type(v) is int and not -EXPR_MAX_ABS <= v <= EXPR_MAX_ABS:
        raise ExprError(f"a value beyond +-2**{EXPR_MAX_ABS.bit_length() - 1} (too large for a launch or shape)")
    return v


def evaluate(t: tuple, env: dict[str, int]):
    """The value of a parsed tree. Every intermediate value is bounded (an ExprError beyond the bound,
    so no product grows past 128 bits), and a division, modulo or cdiv by zero is an ExprError."""
    return _bounded(_evaluate(t, env))


def _evaluate(t: tuple, env: dict[str, int]):
    k = t[0]
    if k == "int":
        return t[1]
    if k == "name":
        if t[1] not in env:
            raise ExprError(f"unknown name {t[1]!r}")
        return env[t[1]]
    if k == "neg":
        return -evaluate(t[1], env)
    if k in ("+", "-", "*", "//", "%"):
        a, b = evaluate(t[1], env), evaluate(t[2], env)
        if k == "+":
            return a + b
        if k == "-":
            return a - b
        if k == "*":
            return a * b
        if k == "//":
            return _floordiv(a, b)
        return a - b * _floordiv(a, b, "modulo")
    if k == "call":
        args = [evaluate(x, env) for x in t[2:]]
        if t[1] == "cdiv":
            return -_floordiv(-args[0], args[1], "cdiv")
        return min(args) if t[1] == "min" else max(args)
    if k == "cmp":
        a, b = evaluate(t[2], env), evaluate(t[3], env)
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[t[1]]
    if k == "and":
        return all(evaluate(x, env) for x in t[1:])
    if k == "or":
        return any(evaluate(x, env) for x in t[1:])
    raise ExprError(f"bad expression node {k!r}")
