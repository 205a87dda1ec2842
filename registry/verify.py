"""`kreg verify`: for each variant, in a child process with a time limit, compile, prove and test it
(numerics on the chosen device; speed on the GPU); store the results and print a table (or JSON). A
variant that hangs, traps or corrupts memory fails alone."""
from __future__ import annotations

import datetime
import json
import multiprocessing as mp
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from kreg import __version__

from .catalog import Entry, load_catalog
from .schema import Op
from .store import Store

PROPS = ("read_only", "in_bounds", "race_free", "barrier_safe")
MAX_REASONS = 12


@dataclass(frozen=True)
class Options:
    """What verify runs. On the CPU: named cases whose buffers fit cpu_case_bytes, plus `ragged`
    seeded shapes that fit cpu_ragged_bytes; on the GPU: every named case (up to gpu_case_bytes if set)
    plus `ragged` seeded shapes that fit gpu_ragged_bytes and `ragged` more of at least 1/64 of it,
    and the speed of every named case."""
    seed: int = 0
    ragged: int = 3
    cpu_case_bytes: int = 256 << 10
    cpu_ragged_bytes: int = 64 << 10
    gpu_ragged_bytes: int = 64 << 20
    gpu_case_bytes: int | None = None
    speed: bool = True
    prove: bool = True
    prove_timeout_ms: int = 10_000
    speed_cases: str = "all"          # "all" named cases, or only the "largest" (most bytes moved)


def _blank(entry: Entry) -> dict:
    v = entry.variant
    return {"op": v.op, "name": v.name, "safety": v.safety, "hash": entry.hash, "types": dict(v.types),
            "proofs": {p: "unknown" for p in PROPS}, "numerics": "not-run", "speed": None,
            "verdict": "rejected", "reasons": []}


def choose_cases(op: Op, variant, device: str, opts: Options) -> dict[str, dict[str, int]]:
    from kreg.conformance.shapes import named_cases, ragged_dims
    named = named_cases(op, variant, opts.cpu_case_bytes if device == "cpu" else opts.gpu_case_bytes)
    budget = opts.cpu_ragged_bytes if device == "cpu" else opts.gpu_ragged_bytes
    extra = ragged_dims(op, variant, opts.ragged, budget, seed=opts.seed)
    if device == "gpu":   # and a few large ones: many blocks, then a ragged tail
        extra += [d for d in ragged_dims(op, variant, opts.ragged, budget, seed=opts.seed + 1, min_bytes=budget // 64)
                  if d not in extra]
    return named | {"seeded-" + "-".join(f"{k}{v}" for k, v in d.items()): d for d in extra}


def prove(res: dict, variant, op: Op, ptx: str, opts: Options) -> None:
    try:
        from kreg.checker.prove import prove_variant
    except ImportError:
        res["reasons"].append("checker: not available (kreg.checker.prove missing); proofs are unknown")
        return
    try:
        verdicts = prove_variant(variant, op, ptx, timeout_ms=opts.prove_timeout_ms)
    except Exception as e:
        res["reasons"].append(f"checker: failed ({type(e).__name__}: {e}); proofs are unknown")
        return
    details = {}
    for p in PROPS:
        vd = verdicts.get(p)
        status = getattr(vd, "status", "unknown")
        res["proofs"][p] = status if status in ("proven", "refuted", "unknown") else "unknown"
        details[p] = {k: getattr(vd, k, None) for k in ("status", "scope", "reason", "witness")}
        if status != "proven":
            res["reasons"].append(f"checker: {p} {status}: {getattr(vd, 'reason', None) or 'no reason given'}")
        elif getattr(vd, "scope", None) not in (None, "all-dims"):
            res["reasons"].append(f"checker: {p} proven for {vd.scope} only, not for all dims in range")
    res["proof_details"] = json.loads(json.dumps(details, default=str))


def verify_entry(entry: Entry, op: Op, device: str, opts: Options | None = None) -> dict:
    """Runs in the child: every stage of one variant, as the JSON entry DESIGN.md fixes."""
    from kreg.checker.compile import CompileError, compile_cuda
    from kreg.conformance.devices import open_device
    from kreg.conformance.numerics import run_numerics
    opts = opts or Options()
    v = entry.variant
    res = _blank(entry)
    try:
        compiled = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
    except CompileError as e:
        res["reasons"].append(str(e))
        return res
    res["ptx_sha256"] = compiled.sha256
    if opts.prove:
        prove(res, v, op, compiled.ptx, opts)
    else:
        res["reasons"].append("checker: not run (--no-prove); proofs are unknown")
    try:
        dev = open_device(device)
    except RuntimeError as e:
        res["reasons"].append(f"conformance: {e}; numerics not run")
        dev = None
    if dev is not None:
        cases = choose_cases(op, v, device, opts)
        num = run_numerics(dev, compiled.ptx, v, op, cases, seed=opts.seed)
        res["numerics"] = num.status
        res["device_detail"] = num.device
        res["cases_run"] = [f"{c.case} {c.dims}" for c in num.cases]
        res["numerics_detail"] = [c.as_json() for c in num.cases]
        fails = num.failures()
        res["reasons"] += [f"numerics: {f}" for f in fails[:MAX_REASONS]]
        if len(fails) > MAX_REASONS:
            res["reasons"].append(f"numerics: ... and {len(fails) - MAX_REASONS} more (numerics_detail has all)")
        if num.status == "not-run":
            res["reasons"].append(f"numerics: {num.reason}")
        if num.status == "pass" and device == "gpu" and opts.speed:
            from kreg.conformance.shapes import named_cases
            from kreg.conformance.speed import measure
            timed = named_cases(op, v, None)
            if opts.speed_cases == "largest":    # the case moving the most bytes: the one the targets name
                big = max(timed, key=lambda c: op.traffic_bytes(timed[c], v.types))
                timed = {big: timed[big]}
            sp = measure(dev, compiled.ptx, v, op, timed)
            res["speed"] = sp
            if sp["above_roofline"]:
                res["reasons"].append(f"speed: {sp['pct_of_copy_bw']:.0f}% of the measured copy bandwidth is above the "
                                      "roofline: a broken kernel or a broken measurement, not a figure to report")
    res["verdict"] = verdict(res)
    return res


def verdict(res: dict) -> str:
    """rejected if compile or numerics fail (or did not run); a safe variant is safe only if all four
    proofs are proven and numerics pass; an unsafe variant is unsafe if numerics pass."""
    if res["numerics"] != "pass":
        if res["numerics"] == "not-run":
            res["reasons"].append("verdict: rejected because numerics did not run")
        return "rejected"
    if res["safety"] == "safe":
        open_ = [p for p in PROPS if res["proofs"][p] != "proven"]
        if open_:
            res["reasons"].append(f"verdict: a safe variant needs all four proofs; not proven: {', '.join(open_)}")
            return "rejected"
        return "safe"
    return "unsafe"


def _child(entry: Entry, op: Op, device: str, opts: Options, conn) -> None:
    try:
        conn.send(("ok", verify_entry(entry, op, device, opts)))
    except BaseException as e:   # report, never raise across the process boundary
        conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"))
    finally:
        conn.close()


def run_isolated(entry: Entry, op: Op, device: str, timeout: float, opts: Options | None = None) -> dict:
    """verify_entry in a spawned child; a hang, crash or trap becomes a rejected entry saying so."""
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(entry, op, device, opts or Options(), send), daemon=True)
    proc.start()
    send.close()
    status, payload = "error", None
    if recv.poll(timeout):
        try:
            status, payload = recv.recv()
        except EOFError:
            payload = None
    else:
        payload = f"timed out after {timeout:g} s (a hang?); the child process was killed"
        proc.kill()
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if status == "ok":
        return payload
    res = _blank(entry)
    res["numerics"] = "fail"
    res["reasons"].append(payload or f"the child process died (exit code {proc.exitcode}): a crash or memory corruption")
    return res


def failed(r: dict) -> bool:
    return r["verdict"] == "rejected" or r["numerics"] == "fail" or bool((r.get("speed") or {}).get("above_roofline"))


def _speed_cell(r: dict) -> str:
    sp = r.get("speed")
    if not sp:
        return "-"
    if sp.get("above_roofline"):
        return "[red]ABOVE ROOFLINE[/]"
    ratio = (sp.get("ratio_to_fastest") or {}).get(sp.get("case"))
    return f"{sp['median_us']:.1f} us, {sp['pct_of_copy_bw']:.0f}% bw" + (f", x{ratio:.2f}" if ratio else "")


def _store_stages(store: Store, e: Entry, device: str, r: dict) -> None:
    store.put(e.hash, __version__, device, "proof", e.op, e.name,
              {"proofs": r["proofs"], "details": r.get("proof_details"), "ptx_sha256": r.get("ptx_sha256")})
    store.put(e.hash, __version__, device, "numerics", e.op, e.name,
              {"numerics": r["numerics"], "cases": r.get("numerics_detail", [])})
    if r.get("speed"):
        store.put(e.hash, __version__, device, "speed", e.op, e.name, r["speed"])


def run_verify(args) -> int:
    from kreg.conformance.speed import add_ratios
    out, err = Console(), Console(stderr=True)
    cat = load_catalog()
    for e in cat.errors:
        err.print(f"[yellow]skipped[/] {e}", highlight=False)
    entries = cat.entries
    if args.op:
        unknown = sorted(set(args.op) - set(cat.ops))
        if unknown:
            err.print(f"[red]no op {unknown[0]!r}[/] (ops: {', '.join(sorted(cat.ops))})")
            return 2
        entries = [e for e in entries if e.op in args.op]
    if args.variants:
        try:
            entries = [cat.find(k) for k in args.variants]
        except KeyError as x:
            err.print(f"[red]{x.args[0]}[/]")
            return 2
    if not entries:
        err.print("[red]no variants selected[/]")
        return 2
    opts = Options(seed=getattr(args, "seed", 0), speed=not getattr(args, "no_speed", False),
                   prove=not getattr(args, "no_prove", False), speed_cases=getattr(args, "speed_cases", "all"))
    jobs = getattr(args, "jobs", None) or (1 if args.device == "gpu" else min(4, os.cpu_count() or 1))
    store = Store()
    results: dict[int, dict] = {}
    with Progress(console=err, transient=True, disable=args.json) as bar:
        task = bar.add_task("verifying", total=len(entries))

        def one(i: int, e: Entry) -> None:
            r = run_isolated(e, cat.ops[e.op], args.device, args.timeout, opts)
            results[i] = r
            _store_stages(store, e, args.device, r)      # kept as it comes: a killed run loses nothing done
            bar.advance(task)
            bar.update(task, description=f"{e.op}/{e.name}: {r['verdict']}")
            if args.json:                                # no bar under --json: a line per variant instead
                print(f"[{len(results)}/{len(entries)}] {e.op}/{e.name}: {r['verdict']}", file=sys.stderr, flush=True)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for f in [pool.submit(one, i, e) for i, e in enumerate(entries)]:
                f.result()
    ordered = [results[i] for i in range(len(entries))]
    add_ratios(ordered)
    for e, r in zip(entries, ordered):
        if r.get("speed"):       # again, now with the ratios to the op's other variants
            store.put(e.hash, __version__, args.device, "speed", e.op, e.name, r["speed"])
        store.put(e.hash, __version__, args.device, "verdict", e.op, e.name, r)
    if args.json:
        print(json.dumps({"device": args.device, "tool_version": __version__, "options": asdict(opts),
                          "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                          "variants": ordered}, indent=2, default=str))
    else:
        _table(out, args.device, ordered)
    return 1 if any(failed(r) for r in ordered) else 0


def _table(out: Console, device: str, results: list[dict]) -> None:
    t = Table(title=f"kreg verify on {device}")
    for c in ("op", "variant", "safety", *PROPS, "numerics", "speed", "verdict"):
        t.add_column(c)
    colour = {"proven": "green", "refuted": "red", "unknown": "yellow", "pass": "green", "fail": "red",
              "not-run": "yellow", "safe": "green", "unsafe": "yellow", "rejected": "red"}
    for r in results:
        cells = [r["proofs"][p] for p in PROPS] + [r["numerics"]]
        t.add_row(r["op"], r["name"], r["safety"], *(f"[{colour.get(c, 'white')}]{c}[/]" for c in cells),
                  _speed_cell(r), f"[{colour[r['verdict']]}]{r['verdict']}[/]")
    out.print(t)
    for r in results:
        if r.get("cases_run"):
            out.print(f"  {r['op']}/{r['name']}: cases run: {', '.join(r['cases_run'])}", highlight=False, markup=False)
        for why in r["reasons"]:
            out.print(f"  {r['op']}/{r['name']}: {why}", highlight=False, markup=False)
