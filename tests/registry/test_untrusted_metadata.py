"""Untrusted metadata (item a): YAML anchors and aliases, oversized files, deep nesting and unreadable
values are refused with a SchemaError naming the file, before anything expands."""
import time

import pytest

from kreg.registry.catalog import BUILTIN
from kreg.registry.limits import METADATA_MAX_BYTES
from kreg.registry.schema import SchemaError, load_op, load_variant

ADD = (BUILTIN / "safe" / "add" / "add_bf16.yaml").read_text()
BOMB = "provenance:\n  l0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  l{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))


def _variant(tmp_path, text):
    (tmp_path / "add_bf16.cu").write_text((BUILTIN / "safe" / "add" / "add_bf16.cu").read_text())
    p = tmp_path / "v.yaml"
    p.write_text(text)
    return load_variant(p, {"add": load_op(BUILTIN / "ops" / "add.yaml")})


def _refused(tmp_path, text, fragment):
    t = time.perf_counter()
    with pytest.raises(SchemaError) as e:
        _variant(tmp_path, text)
    assert time.perf_counter() - t < 2
    assert fragment in str(e.value) and "v.yaml" in str(e.value)
    return e.value


def test_the_builtin_variant_loads(tmp_path):
    assert _variant(tmp_path, ADD).name == "add_bf16_safe"


def test_alias_bomb_under_1kb_is_refused_at_once(tmp_path):
    text = ADD.replace("provenance: {author: human, date: 2026-11-23}", BOMB)
    assert len(text) < 1024
    _refused(tmp_path, text, "YAML anchors (&a0) are not allowed in kreg metadata")


def test_an_alias_alone_and_a_merge_key_are_refused(tmp_path):
    _refused(tmp_path, ADD + "doc: *x\n", "not allowed in kreg metadata")
    _refused(tmp_path, ADD.replace("launch:\n", "base: &b {grid: [1], block: [1]}\nlaunch:\n  <<: *b\n"),
             "YAML anchors (&b)")


def test_oversized_metadata_is_refused(tmp_path):
    _refused(tmp_path, ADD + "#" * METADATA_MAX_BYTES, f"larger than {METADATA_MAX_BYTES} bytes")


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path):
    _refused(tmp_path, ADD + "doc: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than")


def test_an_integer_python_will_not_convert_is_refused(tmp_path):
    _refused(tmp_path, ADD + "doc: " + "9" * 5000 + "\n", "a value cannot be read")


def test_a_symlinked_metadata_file_is_refused(tmp_path):
    (tmp_path / "real.yaml").write_text(ADD)
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    with pytest.raises(SchemaError, match="symbolic link"):
        load_variant(tmp_path / "link.yaml", {"add": load_op(BUILTIN / "ops" / "add.yaml")})


def test_an_op_with_an_anchor_is_refused(tmp_path):
    p = tmp_path / "op.yaml"
    p.write_text((BUILTIN / "ops" / "add.yaml").read_text().replace("tolerance:", "x: &t 1\ntolerance:"))
    with pytest.raises(SchemaError, match="op.yaml: <top>: refused: YAML anchors"):
        load_op(p)


def test_a_fifo_is_refused_not_read(tmp_path):
    import os
    os.mkfifo(tmp_path / "fifo.yaml")
    with pytest.raises(SchemaError, match="not a regular file"):
        load_variant(tmp_path / "fifo.yaml", {"add": load_op(BUILTIN / "ops" / "add.yaml")})


def test_the_libyaml_path_reads_every_yaml_of_the_tree_as_the_python_loader_does(monkeypatch):
    """The same value, or the same refusal with the same sentence, as with the Python loader alone."""
    import yaml
    from kreg.registry import yamlsafe
    from helpers.paths import ROOT
    fast = yamlsafe.FastNoAliasLoader
    if fast is None:
        pytest.skip("this PyYAML has no libyaml: only the Python loader is used")
    files = sorted(p for d in ("kernels", "tests/data") for p in (ROOT / d).rglob("*.yaml")
                   if p.is_file() and not p.is_symlink())
    assert len(files) > 300

    def read(path):
        try:
            return "ok", yamlsafe.load_metadata(path)
        except (yaml.YAMLError, ValueError) as e:
            return "refused", type(e).__name__, str(e)
    got = [read(p) for p in files]
    monkeypatch.setattr(yamlsafe, "FastNoAliasLoader", None)
    for p, g in zip(files, got):
        assert g == read(p), p
    libyaml_refused = []
    for p in files:
        try:
            yaml.load(p.read_text(), Loader=fast)
        except (yaml.YAMLError, ValueError):
            libyaml_refused.append(p.parent.name)
    assert libyaml_refused      # the hostile corpus has documents the fast path refuses (then read again)
    for doc, why in ((BOMB, "anchors"), ("a: *x", "aliases"), ("a: 1\na: 2", "given twice"),
                     ("[" * 40 + "]" * 40, "nested deeper")):     # and the fast path itself refuses, at once
        with pytest.raises(yamlsafe.YamlRefused, match=why):
            yaml.load(doc, Loader=fast)
