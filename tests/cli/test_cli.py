import json

from kreg.cli import main


def test_list_json_schema(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all({"op", "name", "safety", "hash", "source"} <= set(r) for r in rows)
    assert all(r["safety"] in ("safe", "unsafe", "vendor") and len(r["hash"]) == 64 for r in rows)


def test_list_filters_by_op(capsys):
    assert main(["list", "--op", "add", "--json"]) == 0
    assert {r["op"] for r in json.loads(capsys.readouterr().out)} == {"add"}
    assert main(["list", "--op", "nosuchop"]) == 2


def test_list_table(capsys):
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    assert "add_bf16_safe" in text and "safe" in text


def test_show(capsys):
    assert main(["show", "add_bf16_safe", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["op"] == "add" and info["launches"][0]["grid"] == ["cdiv(N, 2048)"]
    assert info["op_contract"]["params"]["a"] == {"role": "in", "dtype": "bf16", "shape": ["N"]}
    assert main(["show", info["hash"][:10]]) == 0
    assert "add_bf16_safe" in capsys.readouterr().out
    assert main(["show", "no_such_variant"]) == 2


def test_user_store_variant_and_bad_file(tmp_path, monkeypatch, capsys):
    from kreg.registry.catalog import BUILTIN
    home = tmp_path / "home"
    d = home / "kernels" / "unsafe" / "add"
    d.mkdir(parents=True)
    (d / "mine.cu").write_text((BUILTIN / "safe" / "add" / "add_bf16.cu").read_text())
    (d / "mine.yaml").write_text((BUILTIN / "safe" / "add" / "add_bf16.yaml").read_text()
                                 .replace("add_bf16_safe", "mine").replace("safety: safe", "safety: unsafe")
                                 .replace("add_bf16.cu", "mine.cu"))
    (d / "broken.yaml").write_text("op: add\nname: [oops\n")
    monkeypatch.setenv("KREG_HOME", str(home))
    assert main(["list", "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert any(r["name"] == "mine" and r["origin"] == "user" for r in rows)
    assert "broken.yaml" in captured.err and "not valid YAML" in captured.err
