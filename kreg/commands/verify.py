"""`kreg verify`: the verify pipeline (kreg.pipeline) over the selected variants, a few at a time, each
stage in a child with limits; results stored as they are decided; a table or JSON at the end. Exit
codes: 0 every variant passed, 1 some variant was rejected, 2 usage error, 3 environment error (no GPU,
unusable store, interrupted)."""
from __future__ import annotations

import datetime
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from rich.console import Console
from kreg.untrusted import markup, plain
from rich.progress import Progress
from rich.table import Table

from kreg import __version__, isolate
from kreg.commands import EXIT_ENV, EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_USAGE
from kreg.pipeline import (Options, failed, store_final, store_known_proof, store_known_record, store_recorder,
                           verify_variant)

from kreg.registry.catalog import Entry, load_catalog
from kreg.registry.profiles import uneven_timing
from kreg.registry.results import PROPS
from kreg.registry.store import Store, StoreError



def _speed_cell(r: dict) -> str:
    sp = r.get("speed")
    if not sp:
        return "-"
    if sp.get("above_roofline"):
        return "[red]ABOVE ROOFLINE[/]"
    ratio = (sp.get("ratio_to_fastest") or {}).get(sp.get("case"))
    return f"{sp['median_us']:.1f} us, {sp['pct_of_copy_bw']:.0f}% bw" + (f", x{ratio:.2f}" if ratio else "")




def run_verify(args, out: Console, err: Console) -> int:
    from kreg.conformance.speed import add_ratios
    cat = load_catalog()
    for e in cat.errors:
        err.print(f"[yellow]skipped[/] {markup(e)}", highlight=False)
    entries = cat.entries
    if args.op:
        unknown = sorted(set(args.op) - set(cat.ops))
        if unknown:
            err.print(f"[red]no op {markup(repr(unknown[0]))}[/] (ops: {markup(', '.join(sorted(cat.ops)))})")
            return EXIT_USAGE
        entries = [e for e in entries if e.op in args.op]
    if args.variants:
        try:
            entries = [cat.find(k) for k in args.variants]
        except KeyError as x:
            err.print(f"[red]{markup(x.args[0])}[/]")
            return EXIT_USAGE
    if args.device != "gpu" and not args.variants:   # named ones run, and say why they cannot
        vendor = [e for e in entries if e.variant.vendor]
        if vendor:
            err.print(f"note: {len(vendor)} vendor variant(s) ({', '.join(sorted({e.variant.library for e in vendor}))})"
                      " run on the GPU only; not verified here (`kreg verify --device gpu`)", highlight=False)
            entries = [e for e in entries if not e.variant.vendor]
    if not entries:
        err.print("[red]no variants selected[/]")
        return EXIT_USAGE
    try:
        store = Store()
    except StoreError as e:
        err.print(f"[red]environment error:[/] {markup(e)}", highlight=False)
        return EXIT_ENV
    opts = Options(seed=getattr(args, "seed", 0), speed=not getattr(args, "no_speed", False),
                   prove=not getattr(args, "no_prove", False), speed_cases=getattr(args, "speed_cases", "all"),
                   gpu_case_bytes=(args.max_case_mb << 20) if getattr(args, "max_case_mb", None) else None,
                   timeout_s=args.timeout, preconditions=getattr(args, "preconditions", False))
    # on the GPU too: compile and prove overlap, numerics share the card, each variant is timed alone
    jobs = getattr(args, "jobs", None) or min(4 if args.device == "gpu" else 2, os.cpu_count() or 1)
    isolate.share_cores(jobs)
    results: dict[int, dict] = {}
    interrupted = False
    with Progress(console=err, transient=True, disable=args.json) as bar:
        task = bar.add_task("verifying", total=len(entries))

        def one(i: int, e: Entry) -> None:
            known = None if getattr(args, "reprove", False) else store_known_proof(store, e)
            hint = (lambda sha: None) if getattr(args, "no_records", False) else store_known_record(store, e)
            r = verify_variant(e, cat.ops[e.op], args.device, opts, record=store_recorder(store, e),
                               known_proof=known, known_record=hint)
            results[i] = r
            if not r.interrupted:
                store_final(store, e, r)                 # now: a killed run keeps it
            bar.advance(task)
            bar.update(task, description=markup(f"{e.op}/{e.name}: {r.verdict}"))
            if args.json:                                # no bar under --json: a line per variant instead
                secs = " ".join(f"{k} {v:.1f}" for k, v in r.seconds.items())
                print(plain(f"[{len(results)}/{len(entries)}] {e.op}/{e.name}: {r.verdict} (s: {secs})"), file=sys.stderr,
                      flush=True)

        pool = ThreadPoolExecutor(max_workers=jobs)
        futures = [pool.submit(one, i, e) for i, e in enumerate(entries)]
        try:
            for f in futures:
                f.result()
        except KeyboardInterrupt:
            interrupted = True
            isolate.cancel_all()                         # running children are killed, queued ones never start
            err.print("[red]interrupted[/]: stopping; what was decided is stored")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    done = [i for i in range(len(entries)) if i in results and not results[i].interrupted]
    ordered = [results[i] for i in done]
    add_ratios([r.to_json() for r in ordered])      # fills each report's speed dict in place
    for i, r in zip(done, ordered):       # again, with the speed ratios to the op's other variants
        if r.speed:
            store_final(store, entries[i], r)
    notes = uneven_timing(cat, store, args.device, {e.op for e in entries}) if opts.speed else []
    for n in notes:
        err.print(f"[yellow]note[/]: {markup(n)}", highlight=False)
    if args.json:
        print(json.dumps({"device": args.device, "tool_version": __version__, "options": asdict(opts),
                          "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                          "complete": not interrupted, "variants": [r.to_json() for r in ordered],
                          "notes": notes},
                         indent=2, default=str))
    else:
        _table(out, args.device, [r.to_json() for r in ordered])
    if interrupted:
        return EXIT_INTERRUPTED
    if any(r.verdict == "error" for r in ordered):
        return EXIT_ENV
    return EXIT_REJECTED if any(failed(r) for r in ordered) else EXIT_OK


def _table(out: Console, device: str, results: list[dict]) -> None:
    t = Table(title=f"kreg verify on {device}")
    for c in ("op", "variant", "safety", *PROPS, "numerics", "speed", "verdict"):
        t.add_column(c)
    colour = {"proven": "green", "refuted": "red", "unknown": "yellow", "pass": "green", "fail": "red",
              "not-run": "yellow", "safe": "green", "unsafe": "yellow", "unverified": "yellow", "rejected": "red",
              "error": "red"}
    for r in results:
        scopes = r.get("proof_scopes") or {}
        cells = [("cases only" if (scopes.get(p) or "").startswith("cases") else r["proofs"][p]) for p in PROPS]
        cells.append(r["numerics"])
        t.add_row(markup(r["op"]), markup(r["name"]), markup(r["safety"]),
                  *(f"[{colour.get(c, 'white')}]{markup(c)}[/]" for c in cells),
                  _speed_cell(r), f"[{colour[r['verdict']]}]{r['verdict']}[/]")
    out.print(t)
    for r in results:
        if r.get("cases_run"):
            out.print(plain(f"  {r['op']}/{r['name']}: cases run: {', '.join(r['cases_run'])}"), highlight=False,
                      markup=False)
        for why in r["reasons"]:           # a compiler log keeps its lines, indented under its variant
            out.print(f"  {plain(r['op'])}/{plain(r['name'])}: " + plain(why, lines=True).replace("\n", "\n      "),
                      highlight=False, markup=False)
