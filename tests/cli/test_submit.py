"""`kreg submit` (kreg/submit.py, kreg/commands/submit.py) on the CPU: every hostile case that is a
candidate kernel is rejected with its reason, the store intact and kernels/ unchanged; 8 concurrent
`kreg submit` processes are all recorded; a folder of generated candidates (correct and mutated) gives
the expected accept/reject counts; a duplicate is answered from the store; a safe claim that is not
proven enters as unsafe; name clashes, .ptx sources and the fastest profile over a submitted variant."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kreg.registry.catalog import load_catalog
from kreg.registry.profiles import resolve
from kreg.registry.store import Store

from helpers.hostile import CASES, COMMON, HOSTILE, manifest, store_intact
from helpers.paths import ROOT
from helpers.submit_candidates import generate

HADD_OK = COMMON / "src" / "hadd_ok.cu"
CANDIDATES = int(os.environ.get("KREG_SUBMIT_CANDIDATES", 12))    # bench/submit_throughput.py runs 50

NOT_CANDIDATES = {
    "yaml_alias_bomb_op": "a hostile op YAML, not a candidate: submit takes ops from the catalog",
    "yaml_huge_integer": "a hostile op YAML, not a candidate: submit takes ops from the catalog",
    "markup_in_provenance_show": "a valid kernel (the attack is on `kreg show`): "
                                 "test_submitted_variant_with_markup_is_shown_as_text submits it",
}
CANDIDATE_OF = {"markup_in_metadata_verify": "markup"}     # the case verifies a fine variant beside it
# cases whose variant passes numerics with nothing refuted (the bad write needs one value of a timer the emulator
# never reads): verify rejects the safe claim; submit, by its rule, accepts it as unsafe, never as safe
AT_MOST_UNSAFE = {"timer_steered_write_safe"}


def kreg(home: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048")
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "kreg.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "home"
    shutil.copytree(COMMON / "kernels", h / "kernels")
    monkeypatch.setenv("KREG_HOME", str(h))
    monkeypatch.setenv("KREG_PROVER_MEMORY_MB", "2048")
    return h


def hadd_candidate(folder: Path, name: str, safety: str = "safe", body: str | None = None, block: int = 256,
                   op: str = "hadd") -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    src = HADD_OK.read_text() if body is None else body
    (folder / f"{name}.cu").write_text(src)
    (folder / f"{name}.yaml").write_text(
        f"op: {op}\nname: {name}\nsafety: {safety}\nsource: {name}.cu\nentry: hadd\ntypes: {{T: f32}}\n"
        f"args: [a, b, out, N]\nlaunch:\n  grid: [\"cdiv(N, {block})\"]\n  block: [{block}]\n"
        f"provenance: {{generator: test-llm, prompt_hash: abc123}}\n")
    return folder / f"{name}.cu", folder / f"{name}.yaml"


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"") for p in sorted(folder.rglob("*"))}


def rows(home: Path, stage: str) -> list[tuple]:
    with sqlite3.connect(home / "results.sqlite") as db:
        return db.execute("SELECT name, variant_hash, payload FROM results2 WHERE stage=?", (stage,)).fetchall()


# ---- the hostile corpus through submit --------------------------------------------------------------

def _hostile_params():
    for name in CASES:
        if name in NOT_CANDIDATES:
            yield pytest.param(name, marks=pytest.mark.skip(reason=NOT_CANDIDATES[name]), id=name)
        else:
            yield pytest.param(name, id=name)


def _candidate_name(case: str, m: dict) -> str:
    return CANDIDATE_OF.get(case) or (m["run"][1] if m["run"][0] in ("verify", "show") else m["absent"])


def _stage_case(case: str, m: dict, cand: Path, home: Path) -> tuple[Path, Path]:
    """The case's variant files (not its other files), padded or linked as its manifest says."""
    name = _candidate_name(case, m)
    found = [p for p in (HOSTILE / case / "kernels").glob("*/hadd/*") if p.stem == name]
    assert found, f"{case}: no files of {name}"
    cand.mkdir()
    for p in found:
        shutil.copy(p, cand / p.name, follow_symlinks=False)
    for rel, size in (m.get("pad") or {}).items():
        p = cand / Path(rel).name
        filler = ("// " if p.suffix == ".cu" else "# ") + "x" * 76 + "\n"
        with open(p, "a") as f:
            f.write(filler * (size // len(filler) + 1))
    for rel, target in (m.get("symlink") or {}).items():
        os.symlink(target, cand / Path(rel).name)
    if m.get("swap_cached_ptx"):       # an earlier compile of the source, its cached PTX then replaced
        from kreg.checker.ptx.compile import compile_cuda
        compile_cuda((cand / f"{name}.cu").read_text(), f"{name}.cu")
        good = compile_cuda((HOSTILE / case / m["swap_cached_ptx"]).read_text(), use_cache=False).ptx
        [cached] = [p for p in (home / "cache" / "ptx").glob("*.ptx") if not p.name.startswith("exact-")]
        cached.write_text(good)
    return cand / f"{name}.cu", cand / f"{name}.yaml"


@pytest.mark.parametrize("case", list(_hostile_params()))
def test_hostile_candidate_is_rejected_and_nothing_enters(case, home, tmp_path):
    m = manifest(case)
    src, meta = _stage_case(case, m, tmp_path / "cand", home)
    before = tree(home / "kernels")
    r = kreg(home, "submit", str(src), "--meta", str(meta), "--json")
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    said = "\n".join(doc["reasons"] + doc["why"]) + r.stderr
    assert m["reason"] in said, f"expected {m['reason']!r} in:\n{said[-4000:]}"
    if case in AT_MOST_UNSAFE:
        assert r.returncode == 0 and doc["accepted_as"] == "unsafe", said[-3000:]
        assert not list((home / "kernels" / "safe").rglob(f"{_candidate_name(case, m)}.*"))
        return
    assert r.returncode == 1 and doc["accepted"] is False and doc["decision"] == "rejected", said[-3000:]
    if m.get("stderr"):
        assert m["stderr"] in r.stderr
    if m.get("never_echo"):
        assert m["never_echo"] not in r.stdout + r.stderr
    assert tree(home / "kernels") == before
    store_intact(home)
    if doc["complete"] and doc["candidate"]["hash"]:       # a decided run is stored under the candidate's hash
        verdicts = [json.loads(p) for _, h, p in rows(home, "verdict") if h == doc["candidate"]["hash"]]
        assert verdicts and verdicts[0]["verdict"] == "rejected"


def test_submitted_variant_with_markup_is_shown_as_text(home, tmp_path):
    case = "markup_in_provenance_show"
    src, meta = _stage_case(case, manifest(case), tmp_path / "cand", home)
    r = kreg(home, "submit", str(src), "--meta", str(meta))
    assert r.returncode == 0, r.stdout + r.stderr
    shown = kreg(home, "show", "markup_prov")
    assert shown.returncode == 0 and manifest(case)["reason"] in shown.stdout, shown.stdout + shown.stderr


# ---- decisions, duplicates, installation ------------------------------------------------------------

def test_accepted_candidate_enters_the_registry_and_a_duplicate_is_answered_from_the_store(home, tmp_path):
    from kreg.submit import submit
    src, meta = hadd_candidate(tmp_path / "c", "ok_sub")
    first = submit(src, meta, provenance={"submitter": "alice"})
    assert first.accepted and first.accepted_as == "safe" and not first.from_store, first.to_json()
    assert first.installed == str(home / "kernels" / "safe" / "hadd" / "ok_sub.yaml")
    installed = yaml.safe_load(Path(first.installed).read_text())
    assert installed["safety"] == "safe" and installed["source"] == "ok_sub.cu"
    entry = load_catalog().find("ok_sub")
    assert entry.origin == "user" and entry.hash == first.report.hash == first.candidate_hash
    j = first.to_json()
    assert j["accepted"] is True and j["accepted_as"] == "safe" and j["provenance"]["generator"] == "test-llm"
    assert j["provenance"]["submitter"] == "alice" and j["provenance"]["prompt_hash"] == "abc123"

    again = submit(src, meta)
    assert again.from_store and again.accepted and again.installed == first.installed
    assert again.report.seconds == first.report.seconds          # the stored stages, not new ones
    assert again.seconds < first.seconds
    assert len(rows(home, "verdict")) == 1 and len(rows(home, "proof")) == 1
    [(_, _, sub)] = rows(home, "submission")
    sub = json.loads(sub)
    assert sub["submissions"] == 2 and sub["provenance"]["submitter"] == "alice"

    forced = submit(src, meta, force=True)
    assert not forced.from_store and forced.accepted and forced.installed == first.installed

    listed = kreg(home, "list", "--submitted", "--json")
    assert [v["name"] for v in json.loads(listed.stdout)] == ["ok_sub"]
    shown = kreg(home, "show", "ok_sub", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["submission"]["provenance"]["submitter"] == "alice"
    assert "submitter: alice" in kreg(home, "show", "ok_sub").stdout


def test_safe_claim_not_proven_enters_as_unsafe_with_the_reason(home, tmp_path):
    from kreg.submit import submit
    cand = tmp_path / "c"
    cand.mkdir()
    shutil.copy(ROOT / "kernels/unsafe/attention_merge/attention_merge_fast.cu", cand / "am.cu")     # not proven: its reads
    meta = yaml.safe_load((ROOT / "kernels/unsafe/attention_merge/attention_merge_fast_bf16.yaml").read_text())
    meta |= {"name": "merge_claimed", "safety": "safe", "source": "am.cu"}
    (cand / "am.yaml").write_text(yaml.safe_dump(meta))
    s = submit(cand / "am.cu", cand / "am.yaml")
    j = s.to_json()
    assert s.accepted and s.accepted_as == "unsafe" and j["claimed"] == "safe", j
    assert any("claimed safe, but not proven" in w for w in s.why) and "unknown: read_only" in s.why[0]
    assert j["safety"] == "unsafe" and j["verdict"] == "unsafe" and j["hash"] != j["candidate"]["hash"]
    assert Path(s.installed) == Path(os.environ["KREG_HOME"]) / "kernels/unsafe/attention_merge/merge_claimed.yaml"
    entry = load_catalog().find("merge_claimed")
    assert entry.variant.safety == "unsafe" and entry.hash == j["hash"]
    verdicts = {h: json.loads(p)["verdict"] for _, h, p in rows(home, "verdict")}
    assert verdicts == {j["candidate"]["hash"]: "rejected", j["hash"]: "unsafe"}   # verify's semantics kept
    again = submit(cand / "am.cu", cand / "am.yaml")
    assert again.from_store and again.accepted_as == "unsafe" and again.installed == s.installed


def test_name_clash_is_an_error_and_nothing_is_replaced(home, tmp_path):
    src, meta = hadd_candidate(tmp_path / "a", "taken")
    assert kreg(home, "submit", str(src)).returncode == 0
    before = tree(home / "kernels")
    src2, _ = hadd_candidate(tmp_path / "b", "taken", block=128)
    r = kreg(home, "submit", str(src2))
    assert r.returncode == 1 and "a different variant hadd/taken is already registered" in r.stdout, r.stdout
    cand = tmp_path / "c"                         # the name of a built-in variant, other launch geometry
    cand.mkdir()
    shutil.copy(ROOT / "kernels/safe/add/add_bf16.cu", cand / "x.cu")
    meta = yaml.safe_load((ROOT / "kernels/safe/add/add_bf16.yaml").read_text()) | {"source": "x.cu"}
    meta["launch"]["grid"] = ["cdiv(N, 2048) + 1"]
    (cand / "x.yaml").write_text(yaml.safe_dump(meta))
    r = kreg(home, "submit", str(cand / "x.cu"), "--json")
    assert r.returncode == 1 and "already registered (builtin" in r.stdout and not json.loads(r.stdout)["accepted"]
    assert tree(home / "kernels") == before


def test_usage_errors(home, tmp_path):
    src, meta = hadd_candidate(tmp_path / "c", "p")
    ptx = tmp_path / "c" / "p.ptx"
    ptx.write_text("// not read")
    r = kreg(home, "submit", str(ptx), "--meta", str(meta))
    assert r.returncode == 2 and "PTX sources are not supported" in r.stderr
    assert kreg(home, "submit", str(tmp_path / "nope.cu")).returncode == 2
    assert kreg(home, "submit", str(tmp_path / "c"), "--meta", str(meta)).returncode == 2
    (tmp_path / "empty").mkdir()
    assert kreg(home, "submit", str(tmp_path / "empty")).returncode == 2
    if not _has_gpu():                                               # no GPU: an environment error
        r = kreg(home, "submit", str(src), "--device", "gpu")
        assert r.returncode == 3 and "gpu" in r.stderr
    meta.write_text(meta.read_text().replace("source: p.cu", "source: p.ptx"))
    from kreg.submit import submit
    s = submit(None, meta)                                           # a folder's YAML naming a .ptx
    assert s.decision == "rejected" and "PTX sources are not supported" in s.why[0]
    assert not (home / "kernels" / "safe").exists()


def test_unknown_op_and_missing_source_are_rejections(home, tmp_path):
    from kreg.submit import submit
    src, meta = hadd_candidate(tmp_path / "c", "orphan", op="no_such_op")
    s = submit(src, meta)
    assert s.decision == "rejected" and "unknown op 'no_such_op'" in s.why[0]
    src, meta = hadd_candidate(tmp_path / "d", "lost")
    src.unlink()
    s = submit(None, meta)
    assert s.decision == "rejected" and "not found" in s.why[0] and not (home / "kernels" / "safe").exists()


# ---- many at once ---------------------------------------------------------------------------------

def test_eight_concurrent_submit_processes_are_all_recorded(home, tmp_path):
    env = dict(os.environ, KREG_HOME=str(home), KREG_PROVER_MEMORY_MB="2048")
    procs = []
    for k in range(8):
        src, _ = hadd_candidate(tmp_path / f"c{k}", f"conc{k}", safety="unsafe", block=32 * (k + 1))
        procs.append(subprocess.Popen([sys.executable, "-m", "kreg.cli", "submit", str(src), "--json",
                                       "--jobs", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, errs) in zip(procs, outs):
        assert p.returncode == 0 and "Traceback" not in errs, errs[-2000:]
        assert json.loads(out)["accepted_as"] == "safe"
    names = {f"conc{k}" for k in range(8)}
    assert {n for n, _, _ in rows(home, "verdict")} == names
    assert {n for n, _, _ in rows(home, "submission")} == names
    assert {p.stem for p in (home / "kernels" / "safe" / "hadd").glob("*.yaml")} == names
    assert {p.stem for p in (home / "kernels" / "safe" / "hadd").glob("*.cu")} == names
    store_intact(home)
    assert not list((home / "tmp").glob("submit-*"))             # no staging left behind


def test_folder_of_generated_candidates(home, tmp_path):
    expected = generate(tmp_path / "gen", CANDIDATES)
    r = kreg(home, "submit", str(tmp_path / "gen"), "--jobs", "2", "--json", timeout=900)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    got = {s["name"]: s["accepted"] for s in doc["submissions"]}
    assert got == expected
    assert doc["accepted"] == sum(expected.values()) and doc["rejected"] == CANDIDATES - sum(expected.values())
    by_kind = {s["name"].split("_", 1)[1]: s for s in doc["submissions"]}
    assert "in_bounds refuted" in "\n".join(by_kind["oob"]["why"])
    assert "numerics fail" in "\n".join(by_kind["minus"]["why"])
    listed = {v["name"] for v in json.loads(kreg(home, "list", "--submitted", "--json").stdout)}
    assert listed == {n for n, ok in expected.items() if ok}
    store_intact(home)


# ---- profiles see submitted variants ----------------------------------------------------------------

def test_fastest_profile_picks_a_submitted_variant_with_a_better_stored_speed(home, tmp_path):
    from kreg.submit import submit
    cand = tmp_path / "c"
    cand.mkdir()
    shutil.copy(ROOT / "kernels/safe/add/add_bf16.cu", cand / "my_add.cu")
    meta = yaml.safe_load((ROOT / "kernels/safe/add/add_bf16.yaml").read_text())
    meta |= {"name": "my_add", "source": "my_add.cu", "safety": "unsafe"}
    (cand / "my_add.yaml").write_text(yaml.safe_dump(meta))
    s = submit(cand / "my_add.cu", cand / "my_add.yaml", opts=None)
    assert s.accepted, s.to_json()
    cat, store = load_catalog(), Store()
    gpu = "gpu (NVIDIA H100 80GB HBM3, driver 13000)"
    for e in cat.entries:
        if e.op == "add" and e.variant.types == {"T": "bf16"}:
            store.put(variant_hash=e.hash, ptx_sha256="p", checker_version="c", device_kind=gpu, stage="verdict",
                      op=e.op, name=e.name, tool_version="t",
                      payload={"verdict": e.variant.safety, "numerics": "pass",
                               "speed": {"median_us": 5.0 if e.name == "my_add" else 9.0}})
    choice = next(c for c in resolve("fastest", "gpu", cat, store, "c").choices
                  if c.op == "add" and c.types == {"T": "bf16"})
    assert choice.variant == "my_add" and choice.median_us == 5.0, choice
    r = kreg(home, "profile", "show", "fastest", "--device", "gpu", "--json")
    got = next(c for c in json.loads(r.stdout)["choices"] if c["op"] == "add" and c["types"] == {"T": "bf16"})
    assert got["variant"] == "my_add"


# ---- --ray: the same decisions through Ray tasks; the submitting process alone writes the store -----

def test_folder_through_a_local_ray_instance_gives_the_same_decisions(home, tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'kreg[ray]')")
    count = 6
    expected = generate(tmp_path / "gen", count)
    r = kreg(home, "submit", str(tmp_path / "gen"), "--ray", "--jobs", "2", "--json", timeout=900)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "through ray (1 node(s), 2 CPU" in r.stderr
    doc = json.loads(r.stdout)
    got = {s["name"]: s["accepted"] for s in doc["submissions"]}
    assert got == expected and 0 < sum(got.values()) < count
    by_kind = {s["name"].split("_", 1)[1]: s for s in doc["submissions"]}
    assert all(s["verdict"] in ("safe", "unsafe", "rejected") and s["complete"] for s in doc["submissions"])
    listed = {v["name"] for v in json.loads(kreg(home, "list", "--submitted", "--json").stdout)}
    assert listed == {n for n, ok in expected.items() if ok}
    store = Store()
    for s in doc["submissions"]:                 # every result recorded here, by this process
        assert store.latest(s["candidate"]["hash"], "submission") is not None
        assert store.latest(s["candidate"]["hash"], "verdict") is not None
    store_intact(home)
    again = kreg(home, "submit", str(tmp_path / "gen"), "--ray", "--jobs", "2", "--json", timeout=900)
    assert all(s["from_store"] for s in json.loads(again.stdout)["submissions"]), again.stderr[-2000:]


def test_ray_at_an_unreachable_address_is_an_environment_error(home, tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'kreg[ray]')")
    src, meta = hadd_candidate(tmp_path / "c", "ok1")
    r = kreg(home, "submit", str(src), "--ray", "127.0.0.1:1", "--json", timeout=300)
    assert r.returncode == 3 and "cannot reach Ray" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
