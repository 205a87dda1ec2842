"""Where the registry conformance fixture's CPU goes (tests/kernels/test_registry_conformance.py: every registry
variant's numerics on the CPU emulator at the fixture's small cases), one variant after another in this process:
CPU seconds per variant, optionally a cProfile of the whole run, and a digest per variant of every launch's
raw outputs (every allocation's bytes after each launch, its step / thread-instruction / cost counters, or its
error) and of the report, so two checkouts' emulators can be compared bit for bit.

    python bench/conformance_cpu_profile.py --out DIGESTS.json [--profile STATS.prof] [--only SUBSTRING]
    python bench/conformance_cpu_profile.py --compare BEFORE.json AFTER.json
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fixture_options():
    """The fixture's Options, read from the test module itself (so the two cannot drift apart)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import importlib.util
    spec = importlib.util.spec_from_file_location("_conformance", ROOT / "tests/kernels/test_registry_conformance.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.OPTS


def digesting_launch(log: list):
    """machine.launch wrapped: after each launch the digest of all memory, its counters (or its error)."""
    from kreg.checker.emulator import machine as E
    inner = E.launch

    def launch(module, entry, grid, block, shared, args, mem, **kw):
        h = hashlib.sha256(f"{entry} {grid} {block} {shared} {kw}".encode())
        try:
            r = inner(module, entry, grid, block, shared, args, mem, **kw)
        except E.EmulatorError as e:
            h.update(f"error {e}".encode())
            log.append(h.hexdigest())
            raise
        h.update(f"{r.steps} {r.thread_instructions} {r.cost}".encode())
        for a in mem.allocs:
            h.update(a.data.tobytes())
        log.append(h.hexdigest())
        return r
    E.launch = launch


def run(args) -> dict:
    from kreg.pipeline import verify_in_process
    from kreg.suite import CATALOG, ENTRIES
    opts = fixture_options()
    log: list[str] = []
    digesting_launch(log)
    out = {}
    prof = cProfile.Profile() if args.profile else None
    for e in ENTRIES:
        key = f"{e.op}/{e.name}"
        if args.only and args.only not in key:
            continue
        del log[:]
        t = time.process_time()
        if prof:
            prof.enable()
        rep = verify_in_process(e, CATALOG.ops[e.op], "cpu", opts)
        if prof:
            prof.disable()
        dt = time.process_time() - t
        js = rep.to_json()
        for k in ("timings", "time_s", "seconds"):
            js.pop(k, None)
        out[key] = {"cpu_s": round(dt, 3), "launches": len(log),
                    "outputs": hashlib.sha256("".join(log).encode()).hexdigest(),
                    "numerics": js.get("numerics"), "report": hashlib.sha256(
                        json.dumps(js.get("reasons"), sort_keys=True, default=str).encode()).hexdigest()}
        print(f"{dt:7.2f} s {len(log):5d} launches {key} {js.get('numerics')}", flush=True)
    if prof:
        prof.dump_stats(args.profile)
    print(f"total {sum(v['cpu_s'] for v in out.values()):.1f} CPU s over {len(out)} variants")
    return out


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    bad = [k for k in sorted(set(a) | set(b)) if {f: a.get(k, {}).get(f) for f in ("launches", "outputs", "numerics", "report")}
           != {f: b.get(k, {}).get(f) for f in ("launches", "outputs", "numerics", "report")}]
    print(f"{len(a) - len(bad)} of {len(a)} variants bit-identical (every launch's outputs and counters, the report)")
    for k in bad:
        print(f"DIFFERENT: {k}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--profile")
    ap.add_argument("--only")
    ap.add_argument("--compare", nargs=2, type=Path)
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    got = run(args)
    if args.out:
        args.out.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
