"""`kreg verify`: for each variant, in a child process with a time limit, compile, prove and test it;
store the results and print a table (or JSON). A variant that hangs or crashes fails alone."""
from __future__ import annotations

import json
import multiprocessing as mp
import traceback

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from kreg import __version__

from .catalog import Entry, load_catalog
from .store import Store

PROPS = ("read_only", "in_bounds", "race_free", "barrier_safe")


def verify_entry(entry: Entry, device: str) -> dict:
    """Runs in the child: every stage of one variant, as the JSON entry DESIGN.md fixes."""
    from kreg.checker.compile import CompileError, compile_cuda
    v = entry.variant
    res = {"op": v.op, "name": v.name, "safety": v.safety, "hash": entry.hash,
           "proofs": {p: "unknown" for p in PROPS}, "numerics": "not-run", "speed": None,
           "verdict": "rejected", "reasons": []}
    try:
        compiled = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
    except CompileError as e:
        res["reasons"].append(str(e))
        return res
    res["ptx_sha256"] = compiled.sha256
    res["reasons"].append("checker: not available in this build; proofs are unknown")
    res["reasons"].append("conformance: not available in this build; numerics not run")
    res["verdict"] = "unsafe" if not res["reasons"] or v.safety == "unsafe" else "rejected"
    return res


def _child(entry: Entry, device: str, conn) -> None:
    try:
        conn.send(("ok", verify_entry(entry, device)))
    except BaseException as e:   # report, never raise across the process boundary
        conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"))
    finally:
        conn.close()


def run_isolated(entry: Entry, device: str, timeout: float) -> dict:
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(entry, device, send), daemon=True)
    proc.start()
    send.close()
    status, payload = "error", None
    if recv.poll(timeout):
        try:
            status, payload = recv.recv()
        except EOFError:
            payload = None
    else:
        payload = f"timed out after {timeout:g} s"
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if status == "ok":
        return payload
    why = payload or f"the child process died (exit code {proc.exitcode})"
    v = entry.variant
    return {"op": v.op, "name": v.name, "safety": v.safety, "hash": entry.hash,
            "proofs": {p: "unknown" for p in PROPS}, "numerics": "fail", "speed": None,
            "verdict": "rejected", "reasons": [why]}


def run_verify(args) -> int:
    out, err = Console(), Console(stderr=True)
    cat = load_catalog()
    for e in cat.errors:
        err.print(f"[yellow]skipped[/] {e}", highlight=False)
    entries = cat.entries
    if args.op:
        entries = [e for e in entries if e.op == args.op]
    if args.variants:
        try:
            entries = [cat.find(k) for k in args.variants]
        except KeyError as x:
            err.print(f"[red]{x.args[0]}[/]")
            return 2
    if not entries:
        err.print("[red]no variants selected[/]")
        return 2
    store = Store()
    results = []
    with Progress(console=err, transient=True, disable=args.json) as bar:
        task = bar.add_task("verifying", total=len(entries))
        for e in entries:
            bar.update(task, description=f"{e.op}/{e.name}")
            r = run_isolated(e, args.device, args.timeout)
            store.put(e.hash, __version__, args.device, "verdict", e.op, e.name, r)
            results.append(r)
            bar.advance(task)
    failed = [r for r in results if r["verdict"] == "rejected" or r["numerics"] == "fail"]
    if args.json:
        print(json.dumps({"device": args.device, "tool_version": __version__, "variants": results}, indent=2))
    else:
        t = Table(title=f"kreg verify on {args.device}")
        for c in ("op", "variant", "safety", *PROPS, "numerics", "speed", "verdict"):
            t.add_column(c)
        colour = {"proven": "green", "refuted": "red", "unknown": "yellow", "pass": "green", "fail": "red",
                  "safe": "green", "unsafe": "yellow", "rejected": "red"}
        for r in results:
            cells = [r["proofs"][p] for p in PROPS] + [r["numerics"]]
            speed = f"{r['speed']['pct_of_copy_bw']:.0f}% bw" if r.get("speed") else "-"
            t.add_row(r["op"], r["name"], r["safety"], *(f"[{colour.get(c, 'white')}]{c}[/]" for c in cells), speed,
                      f"[{colour[r['verdict']]}]{r['verdict']}[/]")
        out.print(t)
        for r in results:
            for why in r["reasons"]:
                out.print(f"  {r['op']}/{r['name']}: {why}", highlight=False, markup=False)
    return 1 if failed else 0
