"""The `kreg` command line: list, show, verify, submit, profile, lock, run (and later bench).

Exit codes (EXIT_* below): 0 all good; 1 some variant rejected; 2 usage error (a bad argument, an
unknown op or variant, invalid metadata named on the command line); 3 environment error (--device gpu
without CuPy or a GPU, a KREG_HOME or results store that cannot be written or read); 130 interrupted;
141 the reader closed the pipe (as a process killed by SIGPIPE)."""
from __future__ import annotations

import argparse
import errno
import json
import os
import sqlite3
import sys

from rich.console import Console
from rich.table import Table

from kreg import __version__
from kreg.untrusted import markup, plain
from kreg.commands import EXIT_CODES, EXIT_ENV, EXIT_INTERRUPTED, EXIT_OK, EXIT_PIPE, EXIT_REJECTED, EXIT_USAGE  # noqa: F401
from kreg.registry.catalog import Catalog, Entry, HomeEscape, check_home, home, load_catalog
from kreg.registry.schema import SchemaError
from kreg.registry.store import StoreError

PIPE_WIDTH = 1000     # columns of tables written to a pipe or file: never cut to the default 80


class EnvironmentProblem(RuntimeError):
    """Something outside kreg's input is not usable (exit code 3)."""


def _console(stderr: bool = False) -> Console:
    """A console that renders at full width when its stream is not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    return Console(stderr=stderr, width=None if tty else PIPE_WIDTH)


out = _console()
err = _console(stderr=True)


def _variant_json(e: Entry) -> dict:
    v = e.variant
    return {"op": v.op, "name": v.name, "safety": v.safety, "hash": e.hash, "source": f"{v.library} (vendor library)" if v.vendor else str(v.source_path),
            "entry": v.entry, "types": v.types, "origin": e.origin}


def _report_errors(cat: Catalog, as_json: bool) -> None:
    for e in cat.errors:      # the message quotes untrusted metadata: never read as markup
        err.print(f"[yellow]skipped[/] {markup(str(e))}", highlight=False, markup=True) if not as_json else \
            print(f"skipped: {plain(e)}", file=sys.stderr)


def cmd_list(args) -> int:
    cat = load_catalog()
    _report_errors(cat, args.json)
    if args.op and args.op not in cat.ops:
        err.print(f"[red]no op {markup(repr(args.op))}[/] (ops: {markup(', '.join(sorted(cat.ops)))})")
        return EXIT_USAGE
    entries = [e for e in cat.entries if (not args.op or e.op == args.op) and (not args.submitted or e.origin == "user")]
    if args.json:
        print(json.dumps([_variant_json(e) for e in entries], indent=2))
        return EXIT_OK
    what = "submitted variants" if args.submitted else "variants"
    t = Table(title=f"kreg registry: {len(entries)} {what}, {len(cat.ops)} ops")
    for c in ("op", "variant", "safety", "types", "hash", "origin"):
        t.add_column(c)
    for e in entries:
        style = "green" if e.variant.safety == "safe" else "yellow"
        t.add_row(markup(e.op), markup(e.name), f"[{style}]{markup(e.variant.safety)}[/]",
                  markup(",".join(f"{k}={v}" for k, v in e.variant.types.items())), e.hash[:12], e.origin)
    out.print(t)
    return EXIT_OK


def cmd_show(args) -> int:
    cat = load_catalog()
    try:
        e = cat.find(args.variant)
    except KeyError as x:
        err.print(f"[red]{markup(x.args[0])}[/]")
        return EXIT_USAGE
    v, op = e.variant, cat.ops[e.variant.op]
    info = _variant_json(e) | {
        "launches": [{"entry": ln.entry, "args": [a.param or {"expr": a.expr.text, "type": a.ctype} for a in ln.args],
                      "grid": [g.text for g in ln.grid], "block": [b.text for b in ln.block], "shared": ln.shared.text}
                     for ln in v.launches],
        "scratch": {s.name: {"dtype": s.dtype, "shape": [e.text for e in s.shape]} for s in v.scratch.values()},
        "compile_options": list(v.options), "deterministic": v.deterministic, "provenance": v.provenance,
        "op_contract": {"dims": {k: list(r) for k, r in op.dims.items()}, "requires": [r.text for r in op.requires],
                        "params": {p.name: {"role": p.role, "dtype": op.dtype_of(p.name, v.types),
                                            "shape": [s.text for s in p.shape]} for p in op.params.values()},
                        "cases": list(op.cases)},
    }
    if e.origin == "user" and (sub := _submission(e.hash)):
        info["submission"] = sub
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return EXIT_OK
    t = Table(title=markup(f"{v.op}/{v.name}"), show_header=False)
    t.add_column("key", style="bold")
    t.add_column("value")

    def row(key, value):        # metadata is untrusted: shown as text, never read as markup
        t.add_row(markup(str(key)), markup(str(value)))

    for k in ("op", "name", "safety", "hash", "source", "entry", "origin"):
        row(k, str(info[k]))
    row("types", ", ".join(f"{k}={x}" for k, x in v.types.items()) or "-")
    for ln in v.launches:
        row(f"launch {ln.entry}", f"args ({', '.join(a.param or a.expr.text for a in ln.args)}) "
                                  f"grid ({', '.join(g.text for g in ln.grid)}) "
                                  f"block ({', '.join(b.text for b in ln.block)}) shared {ln.shared.text}")
    for sc in v.scratch.values():
        row(f"scratch {sc.name}", f"{sc.dtype}[{', '.join(e.text for e in sc.shape)}]")
    row("compile", " ".join(v.options) or "-")
    row("provenance", ", ".join(f"{k}: {x}" for k, x in v.provenance.items()) or "-")
    if "submission" in info:
        sub = info["submission"]
        row("submitted", ", ".join(f"{k}: {sub['provenance'][k]}" for k in ("submitter", "generator", "prompt_hash",
                                   "parent", "submitted_at") if sub["provenance"].get(k))
            + f" ({sub.get('submissions', 1)} submission(s), accepted as {sub.get('accepted_as')})")
    for p in op.params.values():
        row(f"param {p.name}", f"{p.role} {op.dtype_of(p.name, v.types)}[{', '.join(s.text for s in p.shape)}]")
    row("dims", ", ".join(f"{k} in [{lo}, {hi}]" for k, (lo, hi) in op.dims.items()))
    if op.requires:
        row("requires", "; ".join(r.text for r in op.requires))
    row("cases", ", ".join(op.cases))
    out.print(t)
    return EXIT_OK


def _submission(variant_hash: str) -> dict | None:
    """The stored `kreg submit` record of a variant (provenance, decision), if the store has one."""
    from kreg.registry.store import Store, StoreError
    if not (home() / "results.sqlite").is_file():
        return None
    try:
        row = Store().latest(variant_hash, "submission")
    except (StoreError, sqlite3.Error, OSError):
        return None
    return row["payload"] if row else None


def cmd_verify(args) -> int:
    from kreg.commands.verify import run_verify
    check_environment(args.device)
    return run_verify(args, out, err)


def check_environment(device: str) -> None:
    """Raise EnvironmentProblem unless results can be stored and the device exists. Opening the store
    first is what recreates an empty one or migrates an old one: its notes are said here."""
    from kreg.registry.store import Store, StoreError
    check_home()
    try:
        store = Store()
    except (sqlite3.Error, StoreError, OSError) as e:
        raise EnvironmentProblem(f"the results store under {home()} cannot be used: {e}") from None
    for note in store.notes:
        err.print(f"[yellow]note:[/] {markup(note)}", highlight=False)
    if store.read_only:
        raise EnvironmentProblem(f"the results store {store.path} is read-only, and this command stores every "
                                 "result it decides: nothing was run (the store is intact; make it writable, or "
                                 "set KREG_HOME to another folder)")
    if device == "gpu":
        try:
            import cupy
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:
            raise EnvironmentProblem(f"--device gpu needs CuPy and a CUDA GPU ({type(e).__name__}: {e})") from None
        if n < 1:
            raise EnvironmentProblem("--device gpu: no CUDA GPU found")


def _number(cast, lo, hi, what: str):
    """An argparse type: `cast` of the text within [lo, hi), else an error saying what was expected."""
    def parse(text: str):
        try:
            x = cast(text)
        except ValueError:
            x = None
        if x is None or not lo <= x < hi:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return x
    return parse


positive_int = _number(int, 1, 2**63, "a positive integer")
seed_int = _number(int, 0, 2**63, "an integer >= 0")
positive_seconds = _number(float, 1e-9, 1e7, "a positive number of seconds")


def cmd_submit(args) -> int:
    from kreg.commands.submit import run_submit
    check_environment(args.device)
    return run_submit(args, out, err)


def cmd_profile(args) -> int:
    from kreg.commands.profile import run_profile
    return run_profile(args, out, err)


def cmd_lock(args) -> int:
    from kreg.commands.lock import run_lock
    return run_lock(args, out, err)


def cmd_run(args) -> int:
    from kreg.commands.run import run_run
    check_home()           # the PTX cache and the store are written under $KREG_HOME
    return run_run(args, out, err)


def build_parser() -> argparse.ArgumentParser:
    codes = "; ".join(f"{c} {w}" for c, w in EXIT_CODES.items())
    p = argparse.ArgumentParser(prog="kreg", description="Verified-kernel registry and conformance suite.",
                                epilog=f"exit codes: {codes}")
    p.add_argument("--version", action="version", version=f"kreg {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("list", help="list the registry's variants")
    s.add_argument("--op", help="only this op")
    s.add_argument("--submitted", action="store_true", help="only the user's own variants ($KREG_HOME/kernels)")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_list)
    s = sub.add_parser("show", help="show one variant and its op contract")
    s.add_argument("variant", help="name, op/name or hash prefix")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("verify", help="compile, prove and test variants; store the results")
    s.add_argument("variants", nargs="*", help="names, op/name or hash prefixes (default: all)")
    s.add_argument("--op", action="append", help="only this op's variants (repeatable)")
    s.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    s.add_argument("--json", action="store_true")
    s.add_argument("--timeout", type=positive_seconds, default=300,
                   help="seconds for a variant's numerics (and again its speed) stage before it fails")
    s.add_argument("--jobs", type=positive_int, default=None,
                   help="variants verified at once (default: 2 on cpu, 4 on gpu, where each is timed alone)")
    s.add_argument("--seed", type=seed_int, default=0, help="seed of the inputs and the seeded ragged shapes")
    s.add_argument("--no-speed", action="store_true", help="skip the speed measurement on the GPU")
    s.add_argument("--max-case-mb", type=positive_int, default=None, metavar="MB",
                   help="on the GPU, only the named cases whose buffers fit MB (default: every one; the JSON "
                        "lists the cases run)")
    s.add_argument("--speed-cases", choices=("all", "largest"), default="all",
                   help="time every named case, or only the one that moves the most bytes")
    s.add_argument("--no-prove", action="store_true", help="skip the checker (proofs stay unknown)")
    s.add_argument("--reprove", action="store_true",
                   help="prove again even where the store holds a decided proof of the same PTX by this checker")
    s.add_argument("--no-records", action="store_true",
                   help="search every proof in full, without following a proof record (stored or shipped)")
    s.add_argument("--preconditions", action="store_true",
                   help="where a property is not proven, search the weakest precondition (over the dims and the "
                        "launch) under which all four are, each candidate proved")
    s.set_defaults(func=cmd_verify)
    s = sub.add_parser("submit", help="submit candidate kernels: verify, decide, enter the accepted ones")
    s.add_argument("path", help="a .cu source, or a .py building it with load_inline (its YAML by --meta, "
                   "or beside it), or a folder of candidates")
    s.add_argument("--meta", help="the candidate's variant YAML (default: the source's name with .yaml)")
    s.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    s.add_argument("--json", action="store_true")
    s.add_argument("--jobs", type=positive_int, default=None, help="candidates at once (default: 2 on cpu, 4 on gpu)")
    s.add_argument("--force", action="store_true", help="run every stage again even if the store has a verdict")
    s.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run each candidate as a Ray task (on the cluster at ADDRESS, or $RAY_ADDRESS, or a local "
                        "instance of --jobs CPUs); this process alone writes the store")
    s.add_argument("--no-prove", action="store_true", help="skip the checker (accepted at most as unsafe)")
    s.add_argument("--preconditions", action="store_true",
                   help="where a property is not proven, search the weakest precondition (over the dims and the "
                        "launch) under which all four are, each candidate proved, and report it")
    s.add_argument("--accept-preconditions", action="store_true",
                   help="as --preconditions, and add a proven one to the candidate's requires: (the op's named "
                        "cases that violate it are skipped)")
    s.add_argument("--timeout", type=positive_seconds, default=300, help="seconds for numerics (and speed)")
    s.add_argument("--seed", type=seed_int, default=0, help="seed of the inputs and the seeded ragged shapes")
    for flag in ("generator", "prompt-hash", "parent", "submitter"):
        s.add_argument(f"--{flag}", help=f"provenance: the {flag.replace('-', ' ')} (over the YAML's provenance:)")
    s.set_defaults(func=cmd_submit)
    s = sub.add_parser("profile", help="which variant each op runs under a profile (from the results store)")
    psub = s.add_subparsers(dest="profile_cmd", required=True)
    s = psub.add_parser("show", help="resolve a profile from the stored verify results")
    s.add_argument("profile", nargs="?", default="safe-only", choices=("safe-only", "fastest"))
    s.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_profile)
    from kreg.commands.lock import add_parser as add_lock
    add_lock(sub)
    sub.choices["lock"].set_defaults(func=cmd_lock)
    from kreg.commands.run import add_parser as add_run
    add_run(sub, positive_int, seed_int)
    sub.choices["run"].set_defaults(func=cmd_run)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)       # a usage error exits with 2 here
    try:
        code = args.func(args)
        sys.stdout.flush()                       # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        return _broken_pipe()
    except SchemaError as e:
        err.print(f"[red]invalid metadata:[/] {markup(str(e))}", highlight=False)
        return EXIT_USAGE
    except (EnvironmentProblem, sqlite3.Error, PermissionError, HomeEscape, StoreError) as e:
        err.print(f"[red]environment:[/] {markup(str(e) or type(e).__name__)}", highlight=False)
        return EXIT_ENV
    except OSError as e:
        if e.errno not in (errno.EROFS, errno.ENOSPC, errno.EDQUOT):
            raise
        err.print(f"[red]environment:[/] {markup(str(e))}", highlight=False)
        return EXIT_ENV
    except KeyboardInterrupt:
        err.print("[red]interrupted[/]")
        return EXIT_INTERRUPTED


def _broken_pipe() -> int:
    """The reader went away (`kreg show X --json | head -1`): stop quietly, and keep Python's final
    flush of stdout from raising again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_PIPE


if __name__ == "__main__":
    sys.exit(main())
