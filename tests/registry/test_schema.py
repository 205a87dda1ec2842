import copy

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from kreg.registry.catalog import BUILTIN, load_catalog
from kreg.registry.schema import SchemaError, load_op, load_variant

OP = yaml.safe_load((BUILTIN / "ops" / "add.yaml").read_text())
VARIANT = yaml.safe_load((BUILTIN / "safe" / "add" / "add_bf16.yaml").read_text())


def test_builtin_files_are_valid():
    cat = load_catalog()
    assert not cat.errors, [str(e) for e in cat.errors]
    assert "add" in cat.ops
    assert {e.variant.safety for e in cat.entries if e.op == "add"} == {"safe", "unsafe"}
    for e in cat.entries:
        assert len(e.hash) == 64
    assert len({e.hash for e in cat.entries}) == len(cat.entries)


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return p


# Each mutation makes a document invalid: (path of keys, new value or DELETE, fragment of the message).
DELETE = object()
OP_MUTATIONS = [
    (("op",), DELETE, "missing required key 'op'"),
    (("dims",), DELETE, "missing required key 'dims'"),
    (("dims", "N"), [5, 1], "expected [lo, hi]"),
    (("dims", "N"), "big", "expected [lo, hi]"),
    (("params", "a", "role"), "input", "expected one of in, out, inout, scalar"),
    (("params", "a", "dtype"), "float99", "expected one of"),
    (("params", "a", "shape"), ["N ** 2"], "not allowed"),
    (("params", "a", "shape"), ["M"], "unknown name 'M'"),
    (("params", "a", "shape"), "N", "expected a list"),
    (("params", "a", "colour"), "red", "unknown key 'colour'"),
    (("params",), [], "expected a mapping"),
    (("tolerance", "bf16", "rtol"), "tiny", "expected a number"),
    (("tolerance", "q7"), {"atol": 0, "rtol": 0}, "expected a dtype"),
    (("cases", "qwen3-4b-decode", "N"), 0, "outside"),
    (("cases", "qwen3-4b-decode", "N"), "x", "expected an integer"),
    (("cases",), {}, "at least one named case"),
    (("requires",), ["N"], "not a condition"),
    (("requires",), ["__import__('os').system('true') == 0"], "not allowed"),
    (("types", "T"), ["bf16", "f13"], "expected a list of dtypes"),
    (("reference",), 3, "expected a non-empty string"),
]
VARIANT_MUTATIONS = [
    (("op",), "nosuchop", "unknown op 'nosuchop'"),
    (("safety",), "mostly", "expected one of safe, unsafe"),
    (("source",), "../../etc/passwd", "no folders"),
    (("source",), "missing.cu", "not found"),
    (("entry",), "1bad", "expected an identifier"),
    (("args",), [], "non-empty list"),
    (("args",), ["a", "b", "N"], "'out' of op add is not passed"),
    (("args", 3), "N / 2", "not allowed"),
    (("args", 3), {"expr": "N", "type": "f32"}, "expected one of"),
    (("launch", "grid"), ["cdiv(N)"], "argument"),
    (("launch", "grid"), [1, 1, 1, 1], "1 to 3"),
    (("launch", "block"), ["Q"], "unknown name 'Q'"),
    (("launch", "shared"), "exec('x')", "not allowed"),
    (("types", "T"), "f64", "expected one of bf16, f16"),
    (("types",), {}, "must be bound"),
    (("compile",), {"options": ["--include-path=/etc"]}, "not allowed"),
    (("deterministic",), "yes", "expected true or false"),
]


def _mutate(doc, path, value):
    doc = copy.deepcopy(doc)
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    if value is DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return doc


@pytest.mark.parametrize("path,value,msg", OP_MUTATIONS)
def test_bad_op_is_rejected_with_path(tmp_path, path, value, msg):
    p = _write(tmp_path, "bad.yaml", _mutate(OP, path, value))
    with pytest.raises(SchemaError) as e:
        load_op(p)
    assert msg in str(e.value) and "bad.yaml" in str(e.value)


@pytest.mark.parametrize("path,value,msg", VARIANT_MUTATIONS)
def test_bad_variant_is_rejected_with_path(tmp_path, path, value, msg):
    ops = {"add": load_op(BUILTIN / "ops" / "add.yaml")}
    (tmp_path / "add_bf16.cu").write_text((BUILTIN / "safe" / "add" / "add_bf16.cu").read_text())
    p = _write(tmp_path, "v.yaml", _mutate(VARIANT, path, value))
    with pytest.raises(SchemaError) as e:
        load_variant(p, ops)
    assert msg in str(e.value) and "v.yaml" in str(e.value)
    assert e.value.path or e.value.message


def test_error_names_the_key_path(tmp_path):
    p = _write(tmp_path, "bad.yaml", _mutate(OP, ("params", "b", "shape"), ["N + Q"]))
    with pytest.raises(SchemaError) as e:
        load_op(p)
    assert e.value.path == "params.b.shape[0]"


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(sorted(OP)), sub=st.data(), value=yaml_values)
def test_random_corruption_never_crashes(tmp_path, key, sub, value):
    """Replace any part of a good op file with random YAML: either still valid, or a SchemaError."""
    doc = copy.deepcopy(OP)
    target = doc
    if isinstance(doc[key], dict) and doc[key]:
        k2 = sub.draw(st.sampled_from(sorted(doc[key])))
        target, key = doc[key], k2
    target[key] = value
    p = _write(tmp_path, "fuzz.yaml", doc)
    try:
        load_op(p)
    except SchemaError as e:
        assert "fuzz.yaml" in str(e)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_random_text_never_crashes(tmp_path, text):
    p = _write(tmp_path, "junk.yaml", text)
    with pytest.raises(SchemaError):
        load_op(p)


def test_multi_launch_variant_with_scratch(tmp_path):
    ops = {"add": load_op(BUILTIN / "ops" / "add.yaml")}
    (tmp_path / "k.cu").write_text("// two stages")
    doc = {"op": "add", "name": "two", "safety": "unsafe", "source": "k.cu", "types": {"T": "bf16"},
           "scratch": {"part": {"dtype": "f32", "shape": ["cdiv(N, 1024)"]}},
           "launches": [
               {"entry": "stage1", "args": ["a", "b", "part", "N"], "launch": {"grid": ["cdiv(N, 1024)"], "block": [256]}},
               {"entry": "stage2", "args": ["part", "out", "N"], "launch": {"grid": [1], "block": [1024], "shared": 64}}]}
    v = load_variant(_write(tmp_path, "v.yaml", doc), ops)
    assert [ln.entry for ln in v.launches] == ["stage1", "stage2"]
    assert v.scratch_shape("part", {"N": 5000}) == (5,)
    assert v.launches[1].geometry({"N": 5000}) == ((1, 1, 1), (1024, 1, 1), 64)
    bad = copy.deepcopy(doc)
    del bad["launches"][1]["entry"]
    with pytest.raises(SchemaError) as e:
        load_variant(_write(tmp_path, "v.yaml", bad), ops)
    assert e.value.path == "launches[1]" and "entry" in e.value.message
    bad = copy.deepcopy(doc)
    bad["scratch"]["a"] = bad["scratch"].pop("part")
    with pytest.raises(SchemaError, match="not a param or dim"):
        load_variant(_write(tmp_path, "v.yaml", bad), ops)


def test_traffic_override_counts_the_elements_really_moved(tmp_path):
    doc = copy.deepcopy(OP)
    op = load_op(_write(tmp_path, "op.yaml", doc))
    assert op.traffic_bytes({"N": 1000}, {"T": "bf16"}) == 3 * 2 * 1000
    doc["traffic"] = {"a": "N // 10"}
    op = load_op(_write(tmp_path, "op.yaml", doc))
    assert op.traffic_bytes({"N": 1000}, {"T": "bf16"}) == 2 * 100 + 2 * 2 * 1000
    for bad, msg in (({"nosuch": "N"}, "expected a tensor param"), ({"a": "N / 2"}, "not allowed"),
                     ({"a": "Q"}, "unknown name 'Q'")):
        doc["traffic"] = bad
        with pytest.raises(SchemaError, match=msg):
            load_op(_write(tmp_path, "op.yaml", doc))
