import pytest
from hypothesis import given, strategies as st

from kreg.registry.expr import ExprError, parse, parse_condition


@pytest.mark.parametrize("text,env,want", [
    ("cdiv(N, 256)", {"N": 1000}, 4), ("cdiv(N, 256)", {"N": 1024}, 4), ("cdiv(N, 256)", {"N": 1025}, 5),
    ("min(N, 1024) * 2 + 1", {"N": 5}, 11), ("max(H, 32, 7)", {"H": 8}, 32), ("-N + 3", {"N": 1}, 2),
    ("N // 3 % 4", {"N": 100}, 1), ("(N - 1) // 2", {"N": 8}, 3), (128, {}, 128), ("4*(H//128)*128", {"H": 2560}, 10240),
])
def test_evaluates(text, env, want):
    assert parse(text)(env) == want


@given(st.integers(-10**12, 10**12), st.integers(1, 10**6))
def test_cdiv_and_mod_match_integer_maths(a, b):
    assert parse("cdiv(a, b)")({"a": a, "b": b}) == -(-a // b)
    assert parse("a % b")({"a": a, "b": b}) == a % b


@pytest.mark.parametrize("text", [
    "__import__('os')", "N ** 2", "N / 2", "abs(N)", "N.real", "[N]", "lambda: 1", "1.5", "'x'", "N if N else 1",
    "N << 2", "f(N)", "cdiv(N)", "min()", "N < 2", "", "x" * 600, "True", "N; M", "cdiv(N, b=2)",
])
def test_rejects_outside_grammar(text):
    with pytest.raises(ExprError):
        parse(text)


def test_conditions():
    assert parse_condition("N % 2 == 0 and H <= 8")({"N": 4, "H": 8})
    assert not parse_condition("N % 2 == 0 and H <= 8")({"N": 4, "H": 9})
    assert parse_condition("N == 1 or N > 7")({"N": 9})
    for bad in ("N", "1 < N < 3", "N is 2", "not N == 1"):
        with pytest.raises(ExprError):
            parse_condition(bad)


def test_names_and_unknown_name():
    assert parse("cdiv(T * H, B) + min(V, 3)").names() == {"T", "H", "B", "V"}
    with pytest.raises(ExprError, match="unknown name 'M'"):
        parse("M + 1")({"N": 1})
    with pytest.raises(ExprError, match="division by zero"):
        parse("N // 0")({"N": 1})
