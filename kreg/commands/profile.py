"""`kreg profile show [safe-only|fastest] [--device cpu|gpu] [--json]`: the variant each op runs under a
profile, resolved from the results store, with why each was chosen and why the others were not. Exit
codes: 0 every op has a variant, 1 some op has none, 3 the store holds no verify results for this
device (run `kreg verify` first) or cannot be read."""
from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from kreg.registry.catalog import load_catalog
from kreg.registry.profiles import resolve
from kreg.registry.store import Store, StoreError
from kreg.untrusted import markup, plain


def run_profile(args, out: Console, err: Console) -> int:
    try:
        store = Store()
        for note in store.notes:
            err.print(f"[yellow]note:[/] {markup(note)}", highlight=False)
        res = resolve(args.profile, args.device, load_catalog(), store, _checker_version())
    except StoreError as e:
        err.print(f"[red]environment error:[/] {markup(e)}", highlight=False)
        return 3
    if not res.device_kinds:
        msg = (f"the results store ({store.path}) holds no verify results for --device {args.device}: "
               f"run `kreg verify --device {args.device}` first")
        if args.json:
            print(json.dumps(res.to_json() | {"error": msg}, indent=2))
        err.print(f"[red]no results:[/] {markup(msg)}", highlight=False)
        return 3
    if args.json:
        print(json.dumps(res.to_json(), indent=2))
    else:
        _table(out, res)
    if res.missing:
        ops = sorted({c.op for c in res.missing})
        err.print(f"[red]profile {res.profile} is incomplete on {args.device}[/]: no qualifying variant for "
                  f"{', '.join(ops)}; run `kreg verify --device {args.device} " + " ".join(f"--op {o}" for o in ops)
                  + "` (the reasons are listed above)", highlight=False)
        return 1
    return 0


def _table(out: Console, res) -> None:
    t = Table(title=markup(f"profile {res.profile} on {res.device} (checker {res.checker_version}; "
                           f"{', '.join(res.device_kinds)})"))
    for c in ("op", "types", "variant", "why"):
        t.add_column(c)
    for c in res.choices:
        types = ",".join(f"{k}={v}" for k, v in c.types.items())
        t.add_row(markup(c.op), markup(types), markup(c.variant) if c.variant else "[red]none[/]",
                  markup(c.why or "no candidate qualifies"))
    out.print(t)
    for c in res.choices:
        for case, cc in c.by_case.items():
            out.print(plain(f"  {c.op} {','.join(c.types.values())}: at {case}: {cc.variant} ({cc.why})"),
                      highlight=False, markup=False)
        for name, cc in c.by_class.items():
            out.print(plain(f"  {c.op} {','.join(c.types.values())}: for {name}: {cc.variant} ({cc.why})"),
                      highlight=False, markup=False)
        for name, why in c.passed_over.items():
            out.print(plain(f"  {c.op} {','.join(c.types.values())}: not {name}: {why}"), highlight=False,
                      markup=False)


def _checker_version() -> str:
    """The prover's version, imported only when this command runs (the prover is heavy to import, and every
    `kreg` command line builds this command's parser)."""
    from kreg.checker.prover.prove import CHECKER_VERSION
    return CHECKER_VERSION
