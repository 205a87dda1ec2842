"""`kreg submit SOURCE.cu|SOURCE.py [--meta YAML] | DIR`: candidates through kreg.submit (a few at once with a
progress bar; with --ray, as Ray tasks through kreg.fanout), a table or JSON at the end. Exit codes: 0 every candidate accepted, 1 some rejected or
not entered (a name clash), 2 usage error (missing file, a .ptx source, no candidates), 3 environment
error (no GPU, unusable store, a stage kept from running), 130 interrupted."""
from __future__ import annotations

import datetime
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from kreg import __version__, isolate
from kreg.untrusted import markup, plain
from kreg.commands import EXIT_ENV, EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_USAGE
from kreg.pipeline import Options
from kreg.registry.catalog import load_catalog
from kreg.registry.results import PROPS
from kreg.registry.store import Store, StoreError
from kreg.submit import PTX_NOT_SUPPORTED, NotSupported, SubmitReport, candidates, device_kind, submit



def _usage(err: Console, msg: str) -> int:
    err.print(f"[red]usage error:[/] {markup(msg)}", highlight=False)
    return EXIT_USAGE


def _selected(args) -> list[tuple[Path | None, Path]] | str:
    """The (source, meta) pairs to submit, or why the arguments name none."""
    path = Path(args.path)
    if path.is_dir():
        if args.meta:
            return "--meta goes with a source file, not a folder (each candidate's .yaml is beside its .cu)"
        found = candidates(path)
        return found or f"no candidates (*.yaml beside their .cu) in {path}"
    if path.suffix == ".ptx":
        return PTX_NOT_SUPPORTED
    if path.suffix not in (".cu", ".py"):
        return f"{path}: expected a .cu source, a .py file that builds it with load_inline, or a folder of candidates"
    meta = Path(args.meta) if args.meta else path.with_suffix(".yaml")
    for p in (path, meta):
        if not os.path.lexists(p):
            return f"{p}: no such file" + ("" if args.meta else " (give the metadata with --meta)")
    return [(path, meta)]


def run_submit(args, out: Console, err: Console) -> int:
    chosen = _selected(args)
    if isinstance(chosen, str):
        return _usage(err, chosen)
    try:
        store = Store()
    except StoreError as e:
        err.print(f"[red]environment error:[/] {markup(str(e))}", highlight=False)
        return EXIT_ENV
    remote = None
    if args.ray is not None:
        from kreg.fanout import RayRemote, RayUnavailable
        try:
            remote = RayRemote(args.ray or None, num_cpus=args.jobs)
        except RayUnavailable as e:
            err.print(f"[red]environment error:[/] {markup(str(e))}", highlight=False)
            return EXIT_ENV
        err.print(f"through {remote.describe()}", highlight=False)
    kind = remote.device_kind(args.device) if remote else device_kind(args.device)
    if not kind:
        err.print(f"[red]environment error:[/] --device {args.device}: no usable device"
                  f"{' on the Ray cluster' if remote else ''}; nothing was submitted", highlight=False)
        return EXIT_ENV
    catalog = load_catalog()
    opts = Options(seed=args.seed, prove=not args.no_prove, timeout_s=args.timeout,
                   preconditions=args.preconditions or args.accept_preconditions)
    prov = {"generator": args.generator, "prompt_hash": args.prompt_hash, "parent": args.parent,
            "submitter": args.submitter}
    jobs = args.jobs or (remote.slots(args.device) if remote else min(4 if args.device == "gpu" else 2,
                                                                       os.cpu_count() or 1))
    isolate.share_cores(jobs)
    results: dict[int, SubmitReport] = {}
    interrupted = False
    with Progress(console=err, transient=True, disable=args.json) as bar:
        task = bar.add_task("submitting", total=len(chosen))

        def one(i: int, src, meta) -> None:
            s = submit(src, meta, device=args.device, opts=opts, force=args.force, provenance=prov,
                       catalog=catalog, store=store, kind=kind, remote=remote,
                       accept_preconditions=args.accept_preconditions)
            results[i] = s
            bar.advance(task)
            bar.update(task, description=markup(f"{meta.name}: {_outcome(s)}"))
            if args.json:
                print(plain(f"[{len(results)}/{len(chosen)}] {meta}: {_outcome(s)} ({s.seconds:.1f} s)"), file=sys.stderr,
                      flush=True)

        pool = ThreadPoolExecutor(max_workers=jobs)
        futures = [pool.submit(one, i, src, meta) for i, (src, meta) in enumerate(chosen)]
        try:
            for f in futures:
                f.result()
        except NotSupported as e:
            isolate.cancel_all()
            return _usage(err, str(e))
        except KeyboardInterrupt:
            interrupted = True
            isolate.cancel_all()
            err.print("[red]interrupted[/]: stopping; what was decided is stored")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if remote:
                remote.close()
    done = [results[i] for i in sorted(results)]
    if args.json:
        docs = [s.to_json() for s in done]
        if Path(args.path).is_dir():
            print(json.dumps({"device": args.device, "device_kind": kind, "tool_version": __version__,
                              "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                              "complete": not interrupted, "accepted": sum(s.accepted for s in done),
                              "rejected": sum(not s.accepted for s in done), "submissions": docs},
                             indent=2, default=str))
        elif docs:
            print(json.dumps(docs[0], indent=2, default=str))
    else:
        _table(out, args.device, done)
    if interrupted or any(s.report.interrupted for s in done):
        return EXIT_INTERRUPTED
    if any(s.decision == "error" for s in done):
        return EXIT_ENV
    return EXIT_OK if all(s.accepted for s in done) else EXIT_REJECTED


def _outcome(s: SubmitReport) -> str:
    if s.accepted:
        return f"accepted as {s.accepted_as}" + (" (from the store)" if s.from_store else "")
    return "not entered" if s.decision in ("safe", "unsafe") else s.decision


def _table(out: Console, device: str, done: list[SubmitReport]) -> None:
    t = Table(title=f"kreg submit on {device}: {sum(s.accepted for s in done)} of {len(done)} accepted")
    for c in ("candidate", "op/name", "claimed", *PROPS, "numerics", "outcome"):
        t.add_column(c)
    colour = {"proven": "green", "refuted": "red", "unknown": "yellow", "pass": "green", "fail": "red",
              "not-run": "yellow"}
    for s in done:
        j = s.report.to_json()
        cells = [j["proofs"][p] for p in PROPS] + [j["numerics"]]
        t.add_row(markup(Path(s.meta).name), markup(f"{j['op']}/{j['name']}"), markup(s.claimed),
                  *(f"[{colour.get(c, 'white')}]{markup(c)}[/]" for c in cells),
                  f"[{'green' if s.accepted else 'red'}]{markup(_outcome(s))}[/]")
    out.print(t)
    for s in done:
        label = Path(s.meta).name
        lines = s.why + ([f"entered as {s.installed}"] if s.accepted else [])
        if s.intake:
            lines += [f"intake ({s.intake['form']}): dropped {d}" for d in s.intake["dropped"]]
            lines += [f"intake ({s.intake['form']}): {n}" for n in s.intake["changed"]]
        if not s.accepted:                 # every reason
            lines += [r for r in s.report.reasons if r not in s.why and f"rejected: {r}" not in s.why]
        for why in lines:
            out.print(f"  {plain(label)}: " + plain(why, lines=True).replace("\n", "\n      "), highlight=False,
                      markup=False)
