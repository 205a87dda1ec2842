"""`kreg lock [--profile safe-only|fastest] [--device cpu|gpu] [--op OP ...] [--dtype bf16|f16 ...] -o
kreg.lock [--json]`: pin what a profile resolves from the results store (each op and type binding's
variant hash, PTX sha256, checker version, device kind, verdict and proofs) in a JSON lock file
(registry/lockfile.py) that `kreg run --lock` and `kreg.torch.use_lock` load exactly. Exit codes: 0
written; 1 some selected op has no qualifying variant (nothing written; the ops and the `kreg verify`
to run are named); 2 an unknown op; 3 no verify results for this device, or the store cannot be read."""
from __future__ import annotations

import json

from rich.console import Console

from kreg.registry.catalog import load_catalog
from kreg.registry.lockfile import LockError, make
from kreg.registry.profiles import PROFILES, resolve
from kreg.registry.store import Store, StoreError


def add_parser(sub) -> None:
    s = sub.add_parser("lock", help="pin a profile's variants (exact PTX, proofs, verdicts) in a lock file")
    s.add_argument("--profile", choices=PROFILES, default="safe-only")
    s.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    s.add_argument("--op", action="append", help="only this op (repeatable; default: every op)")
    s.add_argument("--dtype", action="append", choices=("bf16", "f16"), help="only this type binding (repeatable)")
    s.add_argument("-o", "--output", default="kreg.lock", help="the lock file to write (default: kreg.lock)")
    s.add_argument("--json", action="store_true", help="print the lock on stdout too")


def run_lock(args, out: Console, err: Console) -> int:
    cat = load_catalog()
    unknown = sorted(set(args.op or ()) - set(cat.ops))
    if unknown:
        err.print(f"[red]kreg lock:[/] no op {', '.join(unknown)} (ops: {', '.join(sorted(cat.ops))})", highlight=False)
        return 2
    try:
        store = Store()
        res = resolve(args.profile, args.device, cat, store, _checker_version())
        if not res.device_kinds:
            err.print(f"[red]kreg lock:[/] the results store ({store.path}) holds no verify results for --device "
                      f"{args.device}: run `kreg verify --device {args.device}` first", highlight=False)
            return 3
        lock, missing = make(res, store, ops=set(args.op or ()), dtypes=set(args.dtype or ()))
    except StoreError as e:
        err.print(f"[red]environment error:[/] {e}", highlight=False)
        return 3
    except LockError as e:
        err.print(f"[red]kreg lock:[/] {e}", highlight=False)
        return 1
    if missing:
        for c in missing:
            why = "; ".join(f"{n}: {w}" for n, w in c.passed_over.items()) or "no variant registered"
            err.print(f"  {c.op} {','.join(c.types.values())}: {why}", highlight=False, markup=False)
        ops = sorted({c.op for c in missing})
        err.print(f"[red]kreg lock:[/] profile {args.profile} has no qualifying variant on {args.device} for "
                  f"{', '.join(ops)}; nothing written. Run `kreg verify --device {args.device} "
                  + " ".join(f"--op {o}" for o in ops) + "` (or lock fewer with --op, --dtype)", highlight=False)
        return 1
    lock.write(args.output)
    if args.json:
        print(json.dumps(lock.to_json(), indent=2, sort_keys=True))
    err.print(f"wrote {args.output}: {len(lock.entries)} entries ({args.profile} on {args.device}, checker "
              f"{lock.checker_version})", highlight=False, markup=False)
    return 0


def _checker_version() -> str:
    """The prover's version, imported only when this command runs (the prover is heavy to import, and every
    `kreg` command line builds this command's parser)."""
    from kreg.checker.prover.prove import CHECKER_VERSION
    return CHECKER_VERSION
