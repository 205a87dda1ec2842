"""The command line's contract (item g): exit codes from one table (kreg/cli.py), argument
validation as usage errors, environment problems as exit 3, full-width tables in a pipe, and a
closed pipe handled without a traceback."""
import os
import subprocess
import sys

import pytest

from kreg import cli
from kreg.cli import EXIT_CODES, EXIT_ENV, EXIT_OK, EXIT_PIPE, EXIT_REJECTED, EXIT_USAGE, main


def _kreg(*args, home, **kw):
    env = dict(os.environ, KREG_HOME=str(home))
    env.pop("COLUMNS", None)
    return subprocess.Popen([sys.executable, "-m", "kreg.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_exit_codes_are_distinct_and_documented(capsys):
    assert (EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_ENV) == (0, 1, 2, 3) and len(set(EXIT_CODES)) == len(EXIT_CODES)
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert all(f"{c} {w}" in " ".join(text.split()) for c, w in EXIT_CODES.items())
    doc = " ".join(cli.__doc__.split())
    assert all(f"{c} {w}" in doc for c, w in ((0, "all good"), (1, "some variant rejected"), (2, "usage error"),
                                               (3, "environment error")))


@pytest.mark.parametrize("args,fragment", [
    (["--jobs", "-1"], "argument --jobs: expected a positive integer, got '-1'"),
    (["--jobs", "0"], "expected a positive integer"), (["--jobs", "many"], "expected a positive integer"),
    (["--seed", "-1"], "argument --seed: expected an integer >= 0"), (["--timeout", "0"], "positive number of seconds"),
    (["--timeout", "nan"], "positive number of seconds"), (["--device", "tpu"], "invalid choice"),
])
def test_bad_arguments_are_usage_errors(args, fragment, capsys):
    with pytest.raises(SystemExit) as e:
        main(["verify", *args])
    assert e.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_unknown_names_are_usage_errors(capsys):
    assert main(["show", "no_such_variant"]) == EXIT_USAGE
    assert main(["verify", "no_such_variant", "--no-prove"]) == EXIT_USAGE
    assert main(["list", "--op", "[/red]"]) == EXIT_USAGE      # markup in an argument is text
    assert "no op '[/red]'" in capsys.readouterr().err


def test_a_corrupt_store_is_an_environment_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    (tmp_path / "results.sqlite").write_bytes(b"this is not a database" * 100)
    assert main(["verify", "add_bf16_safe", "--no-prove"]) == EXIT_ENV
    assert "environment: the results store under" in capsys.readouterr().err


def test_an_unusable_kreg_home_is_an_environment_error(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("KREG_HOME", str(tmp_path / "file" / "home"))
    assert main(["verify", "add_bf16_safe", "--no-prove"]) == EXIT_ENV
    assert "cannot be used" in capsys.readouterr().err


def test_gpu_without_cupy_is_an_environment_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KREG_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "cupy", None)          # as if CuPy were not installed
    assert main(["verify", "add_bf16_safe", "--device", "gpu", "--no-prove"]) == EXIT_ENV
    assert "--device gpu needs CuPy and a CUDA GPU" in capsys.readouterr().err


def test_tables_in_a_pipe_are_not_cut_to_80_columns(tmp_path):
    p = _kreg("list", home=tmp_path)
    out, err = p.communicate(timeout=60)
    assert p.returncode == EXIT_OK, err
    rows = [line for line in out.splitlines() if "qk_norm_rope_prefill_bf16_x4" in line]
    assert rows and "builtin" in rows[0] and len(rows[0]) > 80 and "…" not in out


def test_a_closed_pipe_ends_quietly(tmp_path):
    p = _kreg("show", "add_bf16_safe", "--json", home=tmp_path)
    p.stdout.close()                                      # the reader goes away before kreg writes
    err = p.stderr.read()
    assert p.wait(timeout=60) == EXIT_PIPE
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err
