"""The `kreg` command line: list, show, verify (and later submit, run, bench)."""
from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table

from kreg import __version__

from .catalog import Catalog, Entry, load_catalog
from .schema import SchemaError

out = Console()
err = Console(stderr=True)


def _variant_json(e: Entry) -> dict:
    v = e.variant
    return {"op": v.op, "name": v.name, "safety": v.safety, "hash": e.hash, "source": str(v.source_path),
            "entry": v.entry, "types": v.types, "origin": e.origin}


def _report_errors(cat: Catalog, as_json: bool) -> None:
    for e in cat.errors:
        err.print(f"[yellow]skipped[/] {e}", highlight=False, markup=True) if not as_json else \
            print(f"skipped: {e}", file=sys.stderr)


def cmd_list(args) -> int:
    cat = load_catalog()
    _report_errors(cat, args.json)
    if args.op and args.op not in cat.ops:
        err.print(f"[red]no op {args.op!r}[/] (ops: {', '.join(sorted(cat.ops))})")
        return 2
    entries = [e for e in cat.entries if not args.op or e.op == args.op]
    if args.json:
        print(json.dumps([_variant_json(e) for e in entries], indent=2))
        return 0
    t = Table(title=f"kreg registry: {len(entries)} variants, {len(cat.ops)} ops")
    for c in ("op", "variant", "safety", "types", "hash", "origin"):
        t.add_column(c)
    for e in entries:
        style = "green" if e.variant.safety == "safe" else "yellow"
        t.add_row(e.op, e.name, f"[{style}]{e.variant.safety}[/]", ",".join(f"{k}={v}" for k, v in e.variant.types.items()),
                  e.hash[:12], e.origin)
    out.print(t)
    return 0


def cmd_show(args) -> int:
    cat = load_catalog()
    try:
        e = cat.find(args.variant)
    except KeyError as x:
        err.print(f"[red]{x.args[0]}[/]")
        return 2
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
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    t = Table(title=f"{v.op}/{v.name}", show_header=False)
    t.add_column("key", style="bold")
    t.add_column("value")
    for k in ("op", "name", "safety", "hash", "source", "entry", "origin"):
        t.add_row(k, str(info[k]))
    t.add_row("types", ", ".join(f"{k}={x}" for k, x in v.types.items()) or "-")
    for ln in v.launches:
        t.add_row(f"launch {ln.entry}", f"args ({', '.join(a.param or a.expr.text for a in ln.args)}) "
                                       f"grid ({', '.join(g.text for g in ln.grid)}) "
                                       f"block ({', '.join(b.text for b in ln.block)}) shared {ln.shared.text}")
    for sc in v.scratch.values():
        t.add_row(f"scratch {sc.name}", f"{sc.dtype}[{', '.join(e.text for e in sc.shape)}]")
    t.add_row("compile", " ".join(v.options) or "-")
    t.add_row("provenance", ", ".join(f"{k}: {x}" for k, x in v.provenance.items()) or "-")
    for p in op.params.values():
        t.add_row(f"param {p.name}", f"{p.role} {op.dtype_of(p.name, v.types)}[{', '.join(s.text for s in p.shape)}]")
    t.add_row("dims", ", ".join(f"{k} in [{lo}, {hi}]" for k, (lo, hi) in op.dims.items()))
    if op.requires:
        t.add_row("requires", "; ".join(r.text for r in op.requires))
    t.add_row("cases", ", ".join(op.cases))
    out.print(t)
    return 0


def cmd_verify(args) -> int:
    from .verify import run_verify
    return run_verify(args)


def cmd_profile(args) -> int:
    from kreg.commands.profile import run_profile
    return run_profile(args, out, err)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kreg", description="Verified-kernel registry and conformance suite.")
    p.add_argument("--version", action="version", version=f"kreg {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("list", help="list the registry's variants")
    s.add_argument("--op", help="only this op")
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
    s.add_argument("--timeout", type=float, default=300, help="seconds for a variant's conformance stage before it fails")
    s.add_argument("--jobs", type=int, default=None, help="variants verified at once (default: 2 on cpu, 4 on gpu, where each is timed alone)")
    s.add_argument("--seed", type=int, default=0, help="seed of the inputs and the seeded ragged shapes")
    s.add_argument("--no-speed", action="store_true", help="skip the speed measurement on the GPU")
    s.add_argument("--speed-cases", choices=("all", "largest"), default="all",
                   help="time every named case, or only the one that moves the most bytes")
    s.add_argument("--no-prove", action="store_true", help="skip the checker (proofs stay unknown)")
    s.set_defaults(func=cmd_verify)
    s = sub.add_parser("profile", help="which variant each op runs under a profile (from the results store)")
    psub = s.add_subparsers(dest="profile_cmd", required=True)
    s = psub.add_parser("show", help="resolve a profile from the stored verify results")
    s.add_argument("profile", nargs="?", default="safe-only", choices=("safe-only", "fastest"))
    s.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_profile)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SchemaError as e:
        err.print(f"[red]invalid metadata:[/] {e}", highlight=False)
        return 2
    except KeyboardInterrupt:
        err.print("[red]interrupted[/]")
        return 130


if __name__ == "__main__":
    sys.exit(main())
