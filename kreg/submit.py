"""The intake for generated kernels (`kreg submit` and the Python API `submit()`): a candidate (CUDA C++
source + variant YAML) is validated against its op, content-addressed (variant_hash), taken through the
verify pipeline (kreg.pipeline: every stage in a child with limits; nothing of it is evaluated as
Python), decided from its report (accepted as safe, accepted as unsafe, or rejected with every reason),
recorded in the store with its provenance, and, if accepted, moved into $KREG_HOME/kernels/{safe,unsafe}/
<op>/ with the accepted class in its YAML (YAML last, by os.replace: never half visible). A duplicate
(a complete stored verdict for its hash by the current checker on this device kind) is answered from
the store without re-running anything, unless force."""
from __future__ import annotations

import datetime
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from kreg import isolate
from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.pipeline import Options, store_final, store_recorder, verdict, verify_variant
from kreg.registry import trust
from kreg.registry.catalog import Catalog, Entry, confined, home, load_catalog, variant_hash
from kreg.registry.intake import Intake, IntakeError, take
from kreg.registry.limits import SOURCE_MAX_BYTES
from kreg.registry.results import PROPS, VariantReport
from kreg.registry.schema import VARIANT_NAME_RE, SchemaError, load_variant
from kreg.registry.store import Store
from kreg.registry.yamlsafe import YamlRefused, load_metadata

NAME_OK = re.compile(VARIANT_NAME_RE)   # the schema's own rule (bounded length): matched whole (fullmatch)
PROVENANCE_KEYS = ("generator", "prompt_hash", "parent", "submitter")
PTX_NOT_SUPPORTED = ("PTX sources are not supported: submit the CUDA C++ source (.cu); kreg proves and tests "
                     "the PTX its pinned NVRTC emits from it")


class NotSupported(ValueError):
    """A candidate kreg cannot take at all (a .ptx source): a usage error, not a verdict."""


@dataclass
class SubmitReport:
    """What became of one candidate. to_json() is VariantReport.to_json() of the decided report (as
    entered in the registry when accepted) plus the submission's own fields."""
    source: str
    meta: str
    report: VariantReport
    claimed: str = ""                           # the safety class the YAML claims
    decision: str = "rejected"                  # safe | unsafe | rejected | error
    why: list[str] = field(default_factory=list)
    candidate_hash: str | None = None
    provenance: dict = field(default_factory=dict)
    from_store: bool = False
    installed: str | None = None                # the variant's YAML in the registry
    seconds: float = 0.0
    intake: dict | None = None                  # a framework-bound source: what was dropped and changed

    @property
    def accepted(self) -> bool:
        return self.decision in ("safe", "unsafe") and self.installed is not None

    @property
    def accepted_as(self) -> str | None:
        return self.decision if self.accepted else None

    def to_json(self) -> dict:
        return self.report.to_json() | {
            "accepted": self.accepted, "accepted_as": self.accepted_as, "decision": self.decision,
            "why": self.why, "claimed": self.claimed,
            "candidate": {"source": self.source, "meta": self.meta, "hash": self.candidate_hash},
            "provenance": self.provenance, "from_store": self.from_store, "installed": self.installed,
            "intake": self.intake, "submit_seconds": round(self.seconds, 2)}


def decide(r: VariantReport) -> tuple[str, list[str]]:
    """The submit decision from a report (fresh or stored) by the one trust rule, the class earned
    whatever the candidate claims (VariantReport.decide(earned=True)), with every reason in words."""
    d = r.decide(earned=True)
    if d.verdict == "error":
        return "error", [f"not decided: {d.undecided}"]
    if d.verdict == "rejected":
        why = [f"rejected: {p} refuted" for p in d.refuted]
        if d.numerics != "pass":
            why.append(f"rejected: numerics {d.numerics}")
        if d.above_roofline:
            why.append("rejected: a speed above the copy roofline")
        return "rejected", why + _precondition_note(r) + [
            x for x in r.reasons if not x.startswith(("verdict:", "preconditions: safe if"))]
    if d.verdict == "safe":
        why = ["accepted as safe: all four properties proven for all dims, numerics pass"]
        if r.safety != "safe":
            why.append("claimed unsafe, but proven: entered as safe")
        return "safe", why
    why = [f"accepted as unsafe: numerics pass, nothing refuted; unknown: {', '.join(d.unproven)}"]
    if r.safety == "safe":
        why.append("claimed safe, but not proven on all four properties for all dims: accepted at most as unsafe")
    return d.verdict, why + _precondition_note(r)


def _precondition_note(r: VariantReport) -> list[str]:
    pre = r.preconditions or {}
    if not pre.get("found"):
        return []
    return [f"safe if {pre['says']} (proven: requires {'; '.join(pre['requires'])}); `kreg submit "
            "--accept-preconditions` adds it to the candidate's requires:"]


def candidates(folder: Path) -> list[tuple[Path | None, Path]]:
    """(source, meta) of each candidate in a folder: every .yaml, its source named by its `source:` key
    (resolved when it is staged)."""
    return [(None, p) for p in sorted(Path(folder).glob("*.yaml")) if not p.name.startswith(".")]


def device_kind(device: str) -> str:
    """The device kind results are stored under (as the numerics stage names it)."""
    if device == "cpu":
        from kreg.checker.emulator.machine import DEVICE_KIND
        return DEVICE_KIND
    got = isolate.run(_gpu_kind, timeout_s=120)     # CUDA is never initialised in this process
    return got.value if got.ok else ""


def _gpu_kind() -> str:
    from kreg.conformance.harness import open_harness
    return open_harness("gpu").describe()


def submit(source_path: str | Path | None, meta_path: str | Path, *, device: str = "cpu",
           opts: Options | None = None, force: bool = False, provenance: dict | None = None,
           catalog: Catalog | None = None, store: Store | None = None, kind: str | None = None,
           remote=None, accept_preconditions: bool = False) -> SubmitReport:
    """Take one candidate through intake. source_path None: the file the YAML's `source:` names, beside
    it. provenance: generator, prompt_hash, parent, submitter (over the YAML's `provenance:` block).
    opts.preconditions searches, where a property is not proven, the weakest precondition that proves them
    all (reported); accept_preconditions (implies it) adds a found one to the candidate's `requires:` and
    takes the candidate so narrowed through the pipeline again (the op's named cases that violate it skipped).
    Never raises for what the candidate holds (that is a rejection); raises NotSupported for a .ptx
    source and StoreError if the store cannot be used. remote, if given (kreg.fanout), runs the pipeline
    elsewhere: remote(entry, op, device, opts) -> VariantReport; this process alone writes the store."""
    t0 = time.monotonic()
    opts = opts or Options()
    if accept_preconditions:
        opts = replace(opts, preconditions=True)
    meta = Path(meta_path)
    if source_path is not None and Path(source_path).suffix == ".ptx":
        raise NotSupported(PTX_NOT_SUPPORTED)
    catalog = catalog or load_catalog()
    store = store or Store()
    kind = kind if kind is not None else device_kind(device)
    sub = SubmitReport(str(source_path or ""), str(meta), VariantReport("", "", "", "", {}))
    root = confined(home() / "tmp")
    root.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(root)
    tmp = Path(tempfile.mkdtemp(prefix=f"submit-{os.getpid()}-", dir=root))
    try:
        try:
            data, src = _read_candidate(source_path, meta)
            sub.source = str(src)
            sub.claimed = str(data.get("safety", ""))
            sub.provenance = _provenance(data, provenance, src, meta)
            got = _intake(_read_source(src, data), data, src)
            if got.form != "cuda":
                sub.intake = got.to_json()
            data = got.data
            entry = _stage(data, got.source, tmp / "claimed", catalog)
        except _Refused as e:
            sub.report = VariantReport(e.op, e.name, e.safety, "", {}, reasons=[e.reason], complete=True)
            sub.decision, sub.why = "rejected", [f"rejected: {e.reason}"]
            return sub
        sub.candidate_hash = entry.hash
        r, sub.from_store = _verified(entry, catalog, store, kind, device, opts, force, remote)
        sub.report = r
        sub.decision, sub.why = decide(r)
        pre = r.preconditions or {}
        if accept_preconditions and pre.get("found") and sub.decision != "error":
            old = data.get("requires") if isinstance(data.get("requires"), list) else []
            data = data | {"requires": old + [c for c in pre["requires"] if c not in old]}
            try:
                entry = _stage(data, got.source, tmp / "preconditioned", catalog)
            except _Refused as e:
                sub.why.append(f"preconditions not accepted: {e.reason}")
            else:
                r, sub.from_store = _verified(entry, catalog, store, kind, device, replace(opts, preconditions=False),
                                              force, remote)
                r.preconditions = pre
                sub.report = r
                sub.decision, why = decide(r)
                skipped = ", ".join(pre.get("skipped_cases") or []) or "none"
                sub.why = [f"preconditions accepted: safe if {pre['says']}; added to the candidate's requires: "
                           f"{'; '.join(pre['requires'])} (the op's named cases that violate it, skipped: {skipped})"] + why
        if sub.decision in ("safe", "unsafe"):
            if sub.decision != entry.variant.safety:      # the accepted class goes into the YAML; the
                staged = entry.variant.source_path          # source is the copy that was verified
                entry = _stage(data | {"safety": sub.decision}, staged.read_bytes(), tmp / "accepted", catalog)
                sub.report = _relabel(r, entry)
                if not _stored_verdict(store, entry.hash, kind):
                    _record(store, entry, sub.report, kind)
            sub.installed, problem = _install(entry)
            if problem:
                sub.why.append(problem)
        if sub.decision != "error":
            _record_submission(store, sub, entry, kind)
        return sub
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        sub.seconds = time.monotonic() - t0


def _verified(entry: Entry, catalog: Catalog, store: Store, kind: str, device: str, opts: Options, force: bool,
              remote) -> tuple[VariantReport, bool]:
    """The candidate's report and whether it came from the store: a complete stored verdict by this checker on
    this device kind (one without a precondition search where one is asked for and would run: not reused), else
    the pipeline's (here or through remote), recorded."""
    stored = None if force else _stored_verdict(store, entry.hash, kind)
    if stored and opts.preconditions and stored.preconditions is None and \
            not all(stored.status(p) == "proven" for p in PROPS):
        stored = None
    if stored:
        return stored, True
    if remote is not None:
        r = remote(entry, catalog.ops[entry.op], device, opts)
        if not r.interrupted and not r.environment_error:
            _record(store, entry, r, kind)
        return r, False
    r = verify_variant(entry, catalog.ops[entry.op], device, opts, record=store_recorder(store, entry))
    if not r.interrupted:
        store_final(store, entry, r, kind)
    return r, False


STALE_STAGING_S = 24 * 3600      # a staging folder this old is stale even if its pid is alive (reused)


def clean_stale_staging(root: Path) -> list[Path]:
    """Remove the staging folders (submit-<pid>-*) a killed submit left in $KREG_HOME/tmp: those of a
    process that no longer runs, or older than a day (also the older unnamed submit-* folders)."""
    gone = []
    now = time.time()
    for d in root.glob("submit-*"):
        try:
            if d.is_symlink() or not d.is_dir():
                continue
            pid = d.name.split("-")[1]
            old = now - d.lstat().st_mtime > STALE_STAGING_S
            if old or (pid.isdigit() and not _alive(int(pid))):
                shutil.rmtree(d, ignore_errors=True)
                gone.append(d)
        except OSError:
            continue
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # e.g. EPERM: it exists under another user
        return True
    return True


class _Refused(Exception):
    def __init__(self, reason: str, data: dict | None = None):
        data = data if isinstance(data, dict) else {}
        self.reason = reason
        self.op, self.name, self.safety = (str(data.get(k, "")) if isinstance(data.get(k), str) else ""
                                           for k in ("op", "name", "safety"))


def _read_candidate(source_path, meta: Path) -> tuple[dict, Path]:
    """The YAML (bounded, no aliases, no Python) and the path of the source it goes with."""
    try:
        data = load_metadata(meta)
    except YamlRefused as e:
        raise _Refused(f"metadata: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise _Refused(f"metadata: not valid YAML{f' at line {mark.line + 1}' if mark else ''}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise _Refused(f"metadata: cannot read: {type(e).__name__}") from None
    if not isinstance(data, dict):
        raise _Refused("metadata: expected a mapping")
    if data.get("safety") == "vendor":
        raise _Refused("metadata: safety: vendor names a library routine; vendor variants are built in, never "
                       "submitted (submit a safe or unsafe kernel)", data)
    if source_path is None:
        name = data.get("source")
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
            raise _Refused("metadata: source: expected a file name beside the YAML (no folders)", data)
        source_path = meta.parent / name
    src = Path(source_path)
    if src.suffix == ".ptx":
        raise _Refused(f"source: {PTX_NOT_SUPPORTED}", data)
    if isinstance(data.get("name"), str) and data["name"].startswith("."):
        raise _Refused("metadata: name: a submitted variant's name must not start with '.'", data)
    return data, src


def _read_source(src: Path, data: dict) -> bytes:
    """The source's bytes, at most SOURCE_MAX_BYTES + 1 (the schema refuses a longer one), never
    through a symbolic link."""
    try:
        st = os.lstat(src)
        if stat.S_ISLNK(st.st_mode):
            raise _Refused("source: the source must be a file, not a symbolic link", data)
        if not stat.S_ISREG(st.st_mode):
            raise _Refused("source: not a regular file", data)
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            return f.read(SOURCE_MAX_BYTES + 1)
    except FileNotFoundError:
        raise _Refused(f"source: file {src.name!r} not found", data) from None
    except OSError as e:
        raise _Refused(f"source: cannot read: {errno.errorcode.get(e.errno, type(e).__name__)}", data) from None


def _intake(raw: bytes, data: dict, src: Path) -> Intake:
    """The source as kreg compiles it (registry/intake.py: a load_inline Python file or a .cu with a
    framework binding reduced to its device code); a source too large or not UTF-8 goes to the schema
    as it is, which says why it is refused."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or len(raw) > SOURCE_MAX_BYTES:
        return Intake(raw, data)
    try:
        return take(text, data, src.name)
    except IntakeError as e:
        raise _Refused(f"source: {e}", data) from None


def _stage(data: dict, source: str | bytes, folder: Path, catalog: Catalog) -> Entry:
    """The candidate as the registry would hold it, in a private folder: the YAML (its `source:` set to
    <name>.cu) and the source; validated by the schema against the catalog's ops."""
    folder.mkdir(parents=True)
    name = data.get("name")
    stem = name if isinstance(name, str) and NAME_OK.fullmatch(name) else "candidate"   # else the schema says why
    staged_src = folder / f"{stem}.cu"
    staged_src.write_bytes(source.encode() if isinstance(source, str) else source)
    staged = folder / f"{stem}.yaml"
    staged.write_text(yaml.dump(data | {"source": staged_src.name}, Dumper=_Dumper, sort_keys=False))
    try:
        v = load_variant(staged, catalog.ops)
    except SchemaError as e:
        raise _Refused(f"metadata: {e.path or '<top>'}: {e.message}", data) from None
    entry = Entry(v, variant_hash(v), "user")
    for b in catalog.entries:
        if b.origin == "builtin" and b.name == v.name and (b.op, b.hash) != (v.op, entry.hash):
            raise _Refused(f"metadata: name: {v.name!r} is already registered (builtin {b.op}/{b.name}): a "
                           "submission cannot take a built-in variant's name under any op; give the candidate "
                           "another `name:`", data)
    return entry


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):       # kreg metadata never holds anchors or aliases
        return True


def _stored_verdict(store: Store, h: str, kind: str) -> VariantReport | None:
    """The complete stored report of this hash by the current checker on this device kind, if any."""
    got = trust.verdict(store, h, checker_version=CHECKER_VERSION, device_kind=kind) if kind else None
    return got.report if got and got.report.complete else None


def _relabel(r: VariantReport, entry: Entry) -> VariantReport:
    """The report of the same PTX and results under the accepted class and its hash, decided again."""
    out = replace(r, safety=entry.variant.safety, hash=entry.hash,
                  reasons=[x for x in r.reasons if not x.startswith("verdict:")])
    out.verdict = verdict(out)
    return out


def _record(store: Store, entry: Entry, r: VariantReport, kind: str) -> None:
    """Every decided result of r under entry's hash (proof, numerics, speed, verdict)."""
    rec = store_recorder(store, entry)
    if r.proofs is not None:
        rec("proof", r)
    if r.numerics in ("pass", "fail"):
        rec("numerics", r)
    store_final(store, entry, r, kind)


@contextmanager
def _locked():
    """One installer at a time across processes (the name-clash check and the move)."""
    path = confined(home() / "tmp" / "install.lock")
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _install(entry: Entry) -> tuple[str | None, str | None]:
    """Move the staged variant into the user registry: the source, then the YAML (what `kreg list`
    finds), each by os.replace. (path, None), or (None, why not) for a name taken by another variant."""
    v = entry.variant
    dest = home() / "kernels" / v.safety / v.op
    with _locked():
        dest = confined(dest)
        same = [e for e in load_catalog().entries if e.name == v.name]     # a name is unique across ops
        if same and (same[0].op, same[0].hash) == (v.op, entry.hash):
            return same[0].variant.path, None
        if same:
            return None, (f"not entered: a different variant {same[0].op}/{v.name} is already registered "
                          f"({same[0].origin}, {same[0].variant.path}); give the candidate another `name:`")
        names = [dest / f"{v.name}.cu", dest / f"{v.name}.yaml"]
        taken = [p for p in names if os.path.lexists(p)]
        if taken:
            return None, f"not entered: {taken[0]} already exists (not a valid variant?); move it aside or rename"
        dest.mkdir(parents=True, exist_ok=True)
        for staged, final in zip((v.source_path, Path(v.path)), names):
            try:
                os.replace(staged, final)
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                part = final.with_name(f".{final.name}.part")   # another file system: copy, then rename
                shutil.copyfile(staged, part)
                os.replace(part, final)
        return str(names[1]), None


def _provenance(data: dict, given: dict | None, src: Path, meta: Path) -> dict:
    block = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
    out = {k: str(block[k]) for k in PROVENANCE_KEYS if block.get(k) is not None}
    out |= {k: str(x) for k, x in (given or {}).items() if x is not None}
    out.setdefault("submitter", os.environ.get("USER") or "unknown")
    return out | {"yaml": {str(k): str(x) for k, x in block.items()}, "source": str(src), "meta": str(meta),
                  "submitted_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def _record_submission(store: Store, sub: SubmitReport, entry: Entry, kind: str) -> None:
    """The submission (provenance and decision) under the candidate's hash and, if it differs, the hash
    it entered the registry under; a resubmission counts, the first provenance stays."""
    from kreg import __version__
    decided = {"decision": sub.decision, "accepted_as": sub.accepted_as, "why": sub.why, "installed": sub.installed,
               "candidate_hash": sub.candidate_hash, "registry_hash": entry.hash}
    with _locked():
        for h in dict.fromkeys((sub.candidate_hash, entry.hash)):
            old = store.latest(h, "submission", device_kind=kind)
            first = old["payload"]["provenance"] if old else sub.provenance
            count = old["payload"].get("submissions", 1) + 1 if old else 1
            store.put(variant_hash=h, ptx_sha256=sub.report.ptx_sha256 or "", device_kind=kind, stage="submission",
                      op=entry.op, name=entry.name, tool_version=__version__,
                      payload=decided | {"provenance": first, "latest": sub.provenance, "submissions": count})
