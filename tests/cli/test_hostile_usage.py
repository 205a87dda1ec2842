"""Hostile input, round two (issue 31): each case is what a hostile or careless user does, and the
sentence kreg must answer with. Names cannot shadow a built-in; nothing kreg writes escapes $KREG_HOME;
YAML keys given twice are refused; a killed submit's staging folders and a half-written PTX cache entry
are cleaned; the terminal never runs escape sequences or markup from untrusted text; the engine refuses
bad model files in sentences (naming file, key or tensor) before loading any weight; PTX that declares
more local memory, registers or shared memory than the target has is refused before any proof or run;
a read-only or full store says so and is never called replaceable. Every case runs on the CPU in
seconds (the CLI cases in a subprocess, as users run it)."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kreg.engine.config import generation_defaults, parse_config
from kreg.engine.errors import EngineError
from kreg.engine.random_model import make_random_model, shape_config
from kreg.engine.weights import Checkpoint, SafetensorsFile
from kreg.untrusted import markup, plain

from helpers.paths import DATA

HOSTILE = DATA / "hostile"
COMMON = HOSTILE / "_common"
HADD_OK = (COMMON / "src" / "hadd_ok.cu").read_text()
BUILTIN = "add_bf16_safe"            # a built-in variant's name (op add)


def kreg(home: Path, *args: str, timeout: int = 120, pre: str = "") -> subprocess.CompletedProcess:
    """The kreg CLI in a subprocess; `pre` is Python run first in that process (to stand in for a full
    disk or a read-only store, which root cannot make with file modes)."""
    env = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048")
    env.pop("COLUMNS", None)
    code = f"{pre}\nimport sys\nfrom kreg.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def hadd_yaml(name: str, source: str, extra: str = "", safety: str = "unsafe") -> str:
    return (f"op: hadd\nname: {name}\nsafety: {safety}\nsource: {source}\nentry: hadd\ntypes: {{T: f32}}\n"
            f"args: [a, b, out, N]\nlaunch:\n  grid: [\"cdiv(N, 256)\"]\n  block: [256]\n{extra}")


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    shutil.copytree(COMMON / "kernels", h / "kernels")
    return h


def candidate(folder: Path, name_yaml: str, body: str = HADD_OK, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "c.cu").write_text(body)
    (folder / "c.yaml").write_text(hadd_yaml(name_yaml, "c.cu", extra))
    return folder / "c.cu"


def on_disk(home: Path, stem: str, name_yaml: str, body: str = HADD_OK, extra: str = "") -> None:
    d = home / "kernels" / "unsafe" / "hadd"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{stem}.cu").write_text(body)
    (d / f"{stem}.yaml").write_text(hadd_yaml(name_yaml, f"{stem}.cu", extra))


def user_files(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in (home / "kernels").rglob("*") if p.is_file()
                  and "ops" not in p.parts)


# ---- names ----------------------------------------------------------------------------------------

def test_a_name_ending_in_a_newline_is_refused(home, tmp_path):
    """`re.match` with `$` accepts a trailing newline: names are matched whole."""
    r = kreg(home, "submit", str(candidate(tmp_path / "c", f'"{BUILTIN}\\n"')))
    assert r.returncode == 1 and "expected an identifier" in r.stdout, r.stdout + r.stderr
    assert user_files(home) == []
    on_disk(home, "nl", '"hadd_nl\\n"')
    r = kreg(home, "list", "--json")
    assert "expected an identifier" in r.stderr and "hadd_nl" not in r.stdout


def test_a_name_too_long_for_a_file_name_is_refused_not_a_crash(home, tmp_path):
    """A 300-character name was staged as <name>.cu before the schema saw it: ENAMETOOLONG, a traceback."""
    r = kreg(home, "submit", str(candidate(tmp_path / "c", "a" * 300)), "--no-prove")
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.returncode == 1 and "name: expected an identifier" in r.stdout, r.stdout + r.stderr
    assert user_files(home) == []


def test_a_submission_cannot_take_a_built_in_name_under_any_op(home, tmp_path):
    """An hadd candidate named as the built-in add variant: refused before any stage runs."""
    t = time.monotonic()
    r = kreg(home, "submit", str(candidate(tmp_path / "c", BUILTIN)))
    assert r.returncode == 1 and f"already registered (builtin add/{BUILTIN})" in r.stdout, r.stdout + r.stderr
    assert "under any op" in r.stdout and user_files(home) == [] and time.monotonic() - t < 60


def test_a_user_variant_on_disk_with_a_built_in_name_is_skipped_and_show_stays_unambiguous(home):
    on_disk(home, "shadow", BUILTIN)
    r = kreg(home, "list", "--json")
    assert "cannot take it under any op" in r.stderr
    assert [v["origin"] for v in json.loads(r.stdout) if v["name"] == BUILTIN] == ["builtin"]
    r = kreg(home, "show", BUILTIN, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["op"] == "add", r.stderr


# ---- paths ----------------------------------------------------------------------------------------

def test_a_folder_of_kreg_home_linked_out_of_it_is_refused(home, tmp_path):
    """$KREG_HOME/kernels/unsafe a link to another folder: kreg submit writes nothing there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, home / "kernels" / "unsafe")
    r = kreg(home, "submit", str(candidate(tmp_path / "c", "hadd_fine")))
    assert r.returncode == 3 and "symbolic link out of it" in r.stderr, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and list(outside.iterdir()) == []


def test_confined_paths_resolve_inside_home(home, tmp_path, monkeypatch):
    from kreg.registry.catalog import HomeEscape, confined
    monkeypatch.setenv("KREG_HOME", str(home))
    (home / "tmp").mkdir()
    assert confined(home / "tmp" / "x") == (home / "tmp" / "x").resolve()
    os.symlink(tmp_path, home / "tmp" / "install.lock")
    with pytest.raises(HomeEscape, match="outside \\$KREG_HOME"):
        confined(home / "tmp" / "install.lock")


# ---- YAML -----------------------------------------------------------------------------------------

def test_a_yaml_key_given_twice_is_refused(home, tmp_path):
    """YAML keeps the last of two equal keys; kreg keeps neither."""
    on_disk(home, "dup", "hadd_dup", extra="safety: safe\n")
    r = kreg(home, "list", "--json")
    assert "'safety' is given twice" in r.stderr and "hadd_dup" not in r.stdout
    r = kreg(home, "submit", str(candidate(tmp_path / "c", "hadd_dup2", extra="name: other\n")))
    assert r.returncode == 1 and "'name' is given twice" in r.stdout, r.stdout


# ---- leftovers ------------------------------------------------------------------------------------

def test_stale_staging_folders_are_cleaned_and_live_ones_kept(tmp_path):
    from kreg.submit import STALE_STAGING_S, clean_stale_staging
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = tmp_path / f"submit-{dead.pid}-x"
    live = tmp_path / f"submit-{os.getpid()}-y"
    old = tmp_path / f"submit-{os.getpid()}-z"
    for d in (gone, live, old):
        d.mkdir()
        (d / "c.cu").write_text("x")
    os.utime(old, (time.time() - STALE_STAGING_S - 60,) * 2)
    assert sorted(clean_stale_staging(tmp_path)) == sorted([gone, old])
    assert live.is_dir() and not gone.exists() and not old.exists()


def test_a_ptx_cache_entry_is_never_left_half_written(tmp_path, monkeypatch):
    """The disk fills while the .ptx is written: neither it nor its .sha256 stays."""
    from kreg.checker.ptx import cache as ptx_cache
    real = ptx_cache._atomic_write

    def full(path, data):
        if path.suffix == ".ptx":
            raise OSError(28, "No space left on device")
        real(path, data)
    monkeypatch.setattr(ptx_cache, "_atomic_write", full)
    entry = ptx_cache.PtxCache(tmp_path, "k")
    entry.put(".version 9.0\n")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(ptx_cache, "_atomic_write", real)
    entry.put(".version 9.0\n")
    assert entry.get() == ".version 9.0\n"


# ---- the terminal ---------------------------------------------------------------------------------

def test_untrusted_text_is_escaped_once_for_all():
    assert plain("a\x1b]0;owned\x07b\x9b2J\u202e") == "a\\x1b]0;owned\\x07b\\x9b2J\\u202e"
    assert plain("l1\nl2\tx", lines=True) == "l1\nl2\tx" and plain("l1\nl2") == "l1\\x0al2"
    assert markup("[/red][bold]x") == "\\[/red]\\[bold]x"


def test_kreg_show_never_sends_escape_sequences(home):
    """A window title, a clear screen and markup in a variant's doc and provenance, and in --submitter."""
    on_disk(home, "esc", "hadd_esc", extra='doc: "\\e]0;owned\\a\\e[2J[/red]"\n'
                                             'provenance: {author: "\\e[5mblink [bold]x"}\n')
    r = kreg(home, "show", "hadd_esc")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout
    assert "\\x1b[5mblink [bold]x" in r.stdout


def test_a_model_path_with_markup_is_shown_as_it_is(tmp_path, home):
    for name in ("[/red]m", "[bold]m"):
        r = kreg(home, "run", "--model", str(tmp_path / name), "--prompt", "hi")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"{tmp_path / name}: no such model directory" in r.stderr.replace("\n", ""), r.stderr


# ---- the engine's inputs --------------------------------------------------------------------------

TINY = dict(vocab_size=512, hidden_size=128, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=1)


def hf(**over):
    raw = shape_config("tiny", **TINY).to_hf() | over
    return {k: v for k, v in raw.items() if v is not ...}


@pytest.mark.parametrize("over, words", [
    ({"rope_scaling": "yarn"}, "key 'rope_scaling': expected a mapping"),
    ({"rope_parameters": [1, 2]}, "key 'rope_parameters': expected a mapping"),
    ({"rope_scaling": {"rope_type": "longrope"}}, "RoPE scaling 'longrope' is not supported"),
    ({"rope_scaling": {"rope_type": ["yarn"]}}, "rope_scaling: key 'rope_type': expected a name"),
    ({"rope_scaling": {"rope_type": "llama3"}}, "key 'factor': RoPE scaling 'llama3' needs a number >= 1, got None"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 1}},
     "llama3 needs 0 < low_freq_factor < high_freq_factor, got 4 and 1"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 2, "beta_fast": 1}}, "RoPE scaling 'linear' does not take "
                                                                               "'beta_fast'"),
    ({"rope_scaling": {"rope_type": "yarn"}}, "rope_scaling: key 'factor': YaRN needs a number >= 1, got None"),
    ({"num_key_value_heads": "1"}, "key 'num_key_value_heads': expected a positive integer, got '1'"),
    ({"hidden_size": True}, "key 'hidden_size': expected a positive integer"),
    ({"vocab_size": ...}, "key 'vocab_size' is missing (transformers would assume 151936"),
    ({"rms_norm_eps": "small"}, "key 'rms_norm_eps': expected a positive number"),
    ({"tie_word_embeddings": "yes"}, "key 'tie_word_embeddings': expected true or false"),
    ({"torch_dtype": ["bf16"]}, "dtype ['bf16'] is not supported"),
])
def test_config_json_problems_are_sentences_naming_the_key(over, words):
    with pytest.raises(EngineError) as e:
        parse_config(hf(**over), "m/config.json")
    assert str(e.value).startswith("m/config.json: ") and words in str(e.value), str(e.value)


def test_absent_config_keys_take_transformers_qwen3_defaults():
    c = parse_config(hf(head_dim=..., rope_theta=..., max_position_embeddings=..., num_key_value_heads=None))
    assert (c.head_dim, c.rope_theta, c.max_position_embeddings, c.kv_heads) == (128, 10000.0, 32768, 2)
    # left out (not null), num_key_value_heads is transformers' default 32, not the number of heads
    assert parse_config(hf(num_attention_heads=64, num_key_value_heads=...)).kv_heads == 32
    with pytest.raises(EngineError, match="'num_key_value_heads' is missing .*assume 32, which does not divide "
                                          "num_attention_heads 2"):
        parse_config(hf(num_key_value_heads=...))


@pytest.mark.parametrize("gen, words", [
    ({"top_k": [1]}, "key 'top_k': expected an integer >= 0, got [1]"),
    ({"eos_token_id": "x"}, "key 'eos_token_id': expected a token id or a list of them, got 'x'"),
    ({"temperature": "hot"}, "key 'temperature'"),
    ({"top_p": 2}, "key 'top_p': expected a number in (0, 1]"),
])
def test_generation_config_problems_are_sentences(tmp_path, gen, words):
    (tmp_path / "generation_config.json").write_text(json.dumps(gen))
    with pytest.raises(EngineError, match="generation_config.json: ") as e:
        generation_defaults(tmp_path)
    assert words in str(e.value)


def test_generation_defaults_are_transformers_and_eos_only_what_the_files_name(tmp_path):
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 7}))
    g = generation_defaults(tmp_path)
    assert g["top_k"] == 50 and g["eos_token_id"] == [7]
    (tmp_path / "generation_config.json").unlink()
    (tmp_path / "config.json").write_text(json.dumps({"eos_token_id": 151645}))
    assert generation_defaults(tmp_path)["eos_token_id"] == [151645]


def test_a_json_key_given_twice_in_a_model_file_is_refused(tmp_path):
    (tmp_path / "generation_config.json").write_text('{"top_k": 1, "top_k": 2}')
    with pytest.raises(EngineError, match="key 'top_k' is given twice"):
        generation_defaults(tmp_path)


def safetensors_bytes(header) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + b"\0" * 64


@pytest.mark.parametrize("header, words", [
    ([1, 2], "the safetensors header is a JSON list"),
    ({"w": {"shape": [2], "data_offsets": [0, 4]}}, "tensor w: dtype None is not a safetensors dtype"),
    ({"w": {"dtype": "BF16", "shape": [4, 3], "data_offsets": [0, 8]}},
     "tensor w: data_offsets span 8 bytes, but BF16 of shape [4, 3] takes 24"),
    ({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4000]}}, "tensor w: data_offsets [0, 4000]"),
    ({"w": {"dtype": "BF16", "shape": "x", "data_offsets": [0, 4]}}, "tensor w: shape 'x'"),
])
def test_a_bad_safetensors_header_is_named(tmp_path, header, words):
    p = tmp_path / "model.safetensors"
    p.write_bytes(safetensors_bytes(header))
    with pytest.raises(EngineError) as e:
        SafetensorsFile(p)
    assert str(e.value).startswith(str(p)) and words in str(e.value), str(e.value)


@pytest.mark.parametrize("fname", ["/etc/passwd", "../x.safetensors", "sub/../../x"])
def test_an_index_naming_a_file_outside_the_model_folder_is_refused_unread(tmp_path, fname):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": fname}}))
    with pytest.raises(EngineError, match="expected the name of a file in the model folder") as e:
        Checkpoint(tmp_path)
    assert "root:" not in str(e.value)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    cfg = shape_config("tiny", max_position_embeddings=256, **TINY)
    return make_random_model(tmp_path_factory.mktemp("tiny"), cfg)


def test_a_tensor_of_the_wrong_shape_is_named_before_anything_loads(tmp_path, tiny_model):
    d = tmp_path / "m"
    shutil.copytree(tiny_model, d)
    raw = json.loads((d / "config.json").read_text()) | {"intermediate_size": 256}
    (d / "config.json").write_text(json.dumps(raw))
    ck = Checkpoint(d)
    with pytest.raises(EngineError, match="tensor model.layers.0.mlp.gate_proj.weight has shape \\[128, 128\\], "
                                          "the config implies \\[256, 128\\]"):
        ck.check(parse_config(raw))


def test_an_absurd_layer_count_is_a_missing_weight_at_once(tiny_model):
    """num_hidden_layers 10**12 made the shape check list 11 * 10**12 tensor names: kreg run hung."""
    raw = json.loads((tiny_model / "config.json").read_text()) | {"num_hidden_layers": 10**12}
    t = time.process_time()
    with pytest.raises(EngineError, match="weight model.layers.1.self_attn.q_proj.weight is missing"):
        Checkpoint(tiny_model).check(parse_config(raw))
    assert time.process_time() - t < 1.0


def test_a_kernel_contract_is_checked_against_the_config_before_any_weight(tmp_path, monkeypatch):
    """More query heads than the attention ops take (Hq <= 128): refused with the op and dims before the
    weights are read or uploaded."""
    from kreg import runtime
    from kreg.engine import Engine
    from kreg.engine import plan as P
    from kreg.engine import resident
    d = make_random_model(tmp_path / "m", shape_config("tiny", **(TINY | {"num_attention_heads": 130,
                                                                           "num_key_value_heads": 2})))

    def never(*a, **k):
        raise AssertionError("weights were uploaded")
    monkeypatch.setattr(resident.Resident, "__init__", never)
    plan = P.explicit(runtime.device("cpu", max_cost=200_000_000), "bf16")
    with pytest.raises(EngineError, match="op qk_norm_rope_kv does not take Hq=130, Hkv=2, S=.*: Hq=130 outside "
                                          "\\[1, 128\\]"):
        Engine(d, device="cpu", plan=plan)


def test_requests_are_checked_against_the_context_up_front(tiny_model):
    from kreg.engine import run
    with pytest.raises(EngineError, match="an empty prompt with --raw"):
        run(tiny_model, "", chat=False)
    seen = []
    with pytest.raises(EngineError, match="leaves room for at most"):
        run(tiny_model, "hi", max_new_tokens=10**9, on_prompt=lambda n, ctx: seen.append((n, ctx)))
    assert seen and seen[0][1] == 256
    with pytest.raises(EngineError, match="the prompt is \\d+ tokens, longer than the model's context of 256"):
        run(tiny_model, "word " * 2000)
    with pytest.raises(EngineError, match="raise --max-seq \\(up to 256\\)"):
        run(tiny_model, "hi", max_new_tokens=100, max_seq=16)


# ---- limits from the compiled PTX -----------------------------------------------------------------

LOCAL_1MIB = """extern "C" __global__ void hadd(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ out, int n) {
    volatile float big[262144];                       // 1 MiB of local memory per thread
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { big[i & 262143] = a[i]; out[i] = big[(i * 7) & 262143] + b[i]; }
}"""
REGS_20M = HADD_OK.replace("if (i < n)", 'asm volatile("{ .reg .b32 t<20000000>; mov.b32 t0, 0; }");\n    if (i < n)')
SHARED_STATIC = """extern "C" __global__ void hadd(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ out, int n) {
    __shared__ float s[16384];                        // 64 KiB static, beside 200 000 bytes dynamic
    extern __shared__ float dyn[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = a[i < n ? i : 0];
    dyn[threadIdx.x] = b[i < n ? i : 0];
    __syncthreads();
    if (i < n) out[i] = s[threadIdx.x] + dyn[threadIdx.x];
}"""


@pytest.mark.parametrize("body, extra, words", [
    (LOCAL_1MIB, "", "1048576 bytes of local memory per thread, more than the CUDA limit of 524288"),
    (REGS_20M, "", "declares more than 262144 registers"),
    (SHARED_STATIC, "", None),
])
def test_ptx_over_the_targets_limits_is_refused_before_any_proof(home, tmp_path, body, extra, words):
    if words is None:                # static + dynamic over the limit
        body, words = SHARED_STATIC, "65536 bytes of static and 200000 of dynamic shared memory"
        src = candidate(tmp_path / "c", "hadd_lim", body)
        meta = (tmp_path / "c" / "c.yaml")
        meta.write_text(meta.read_text().replace("  block: [256]\n", "  block: [256]\n  shared: 200000\n"))
    else:
        src = candidate(tmp_path / "c", "hadd_lim", body, extra)
    t = time.monotonic()
    r = kreg(home, "submit", str(src), "--json")
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    j = json.loads(r.stdout)
    assert r.returncode == 1 and not j["accepted"], r.stdout[-2000:]
    assert any(words in w for w in j["reasons"]), j["reasons"]
    assert "prove" not in j.get("seconds", {}) and time.monotonic() - t < 60


def test_the_registry_kernels_are_inside_the_ptx_bounds_with_room():
    """The bounds are far above what the registry's kernels declare (measured, not assumed)."""
    from kreg.registry import limits, preflight
    from kreg.registry.catalog import load_catalog
    from kreg.checker.ptx.compile import compile_cuda
    cat = load_catalog()
    for name in ("add_bf16_safe", "gemm_wgs_bf16_safe", "attention_prefill_wg_f16_safe"):
        try:
            v = cat.find(name).variant
        except KeyError:
            continue
        ptx = compile_cuda(v.source_path.read_text(), v.source_path.name, options=list(v.options)).ptx
        assert preflight.resources(v, cat.ops[v.op], cat.ops[v.op].cases, ptx) == []
        assert preflight.declared_registers(ptx) * 10 < limits.PTX_MAX_REGISTERS


# ---- the store ------------------------------------------------------------------------------------

READ_ONLY = """
from kreg.registry import store as _s
_real = _s.Store._connect
def _ro(self):
    import sqlite3
    if self.read_only:
        return _real(self)
    return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
_s.Store._connect = _ro
"""
FULL = """
import sqlite3
from kreg.registry import store as _s
class _Full(sqlite3.Connection):               # the disk is full: SQLite's own error for a new result
    def execute(self, sql, *a):
        if sql.lstrip().upper().startswith("INSERT") and "results2" in sql:
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, *a)
def _full(self):
    db = sqlite3.connect(self.path, timeout=60, isolation_level=None, factory=_Full)
    db.execute("PRAGMA journal_mode=WAL")
    db.isolation_level = "IMMEDIATE"
    return db
_s.Store._connect = _full
"""


def _seed_store(home: Path) -> None:
    from kreg.registry.store import Store
    Store(home / "results.sqlite").put(variant_hash="h", ptx_sha256="p", stage="proof", op="hadd", name="x",
                                       tool_version="t", payload={"proofs": {}})


def test_a_read_only_store_says_so_and_is_never_called_replaceable(home):
    _seed_store(home)
    before = (home / "results.sqlite").read_bytes()
    for args, code in ((["profile", "show"], 3), (["verify", "hadd_ro"], 3)):
        on_disk(home, "ro", "hadd_ro")
        r = kreg(home, *args, pre=READ_ONLY)
        said = r.stdout + r.stderr
        assert r.returncode == code and "read-only" in said and "move it aside" not in said, said
        assert "Traceback" not in said
    assert (home / "results.sqlite").read_bytes() == before


def test_a_full_disk_during_verify_is_exit_3_with_a_sentence(home):
    _seed_store(home)
    on_disk(home, "full", "hadd_full")
    r = kreg(home, "verify", "hadd_full", "--no-prove", pre=FULL)
    said = r.stdout + r.stderr
    assert r.returncode == 3 and "is full" in said and "move it aside" not in said, said[-3000:]
    assert "Traceback" not in said
    with sqlite3.connect(home / "results.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_damaged_store_alone_may_be_moved_aside(tmp_path):
    from kreg.registry.store import Store, StoreError
    p = tmp_path / "r.sqlite"
    p.write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError, match="is damaged.*move it aside"):
        Store(p)

