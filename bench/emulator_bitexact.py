"""Bit-exactness of the PTX emulator against the GPU: every tests/data/corpus kernel is compiled once (NVRTC
13.0), run on the GPU through CuPy and on the CPU emulator with the same seeded inputs, and every buffer
is compared afterwards: bit-identical, or within 2 ulp for the documented approximate instructions.
Writes a table (device, date), a JSON record and the GPU's output bytes (for the CPU regression test).

    python bench/emulator_bitexact.py [--out DIR]      # default: bench/results
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data" / "corpus"))
import cases as C  # noqa: E402

from kreg.checker.ptx.compile import compile_cuda  # noqa: E402


def corpus_ptx(case: C.Case, ptx_dir: Path | None) -> tuple[str, str]:
    """The case's PTX compiled here; falls back to a copy compiled elsewhere (ptx_dir/NAME.ptx).
    Returns (ptx, note) where the note says whether both exist and agree byte for byte."""
    shipped = ptx_dir / f"{case.name}.ptx" if ptx_dir else None
    try:
        ptx = compile_cuda(case.source.read_text()).ptx
    except Exception as e:
        if shipped and shipped.exists():
            return shipped.read_text(), f"compiled elsewhere (here: {type(e).__name__})"
        raise
    if shipped and shipped.exists():
        return ptx, "same PTX as shipped" if shipped.read_text() == ptx else "PTX DIFFERS from shipped"
    return ptx, "compiled here"


def run_all(out_dir: Path | None = None, ptx_dir: Path | None = None) -> list[dict]:
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    records, saved = [], {}
    for case in C.CASES:
        try:
            ptx, note = corpus_ptx(case, ptx_dir)
            rec, gpu = C.compare_with_gpu(case, ptx)
            rec["ptx"] = note
            roles = {C.parse_arg(a).name: a.split()[0] for a in case.args if a.split()[0] in ("in", "io", "out")}
            saved.update({f"{case.name}/{k}": np.frombuffer(v, np.uint8) for k, v in gpu.items() if roles[k] != "in"})
        except Exception as e:   # one broken case must not hide the others
            rec = {"case": case.name, "ok": False, "error": f"{type(e).__name__}: {e}",
                   "trace": traceback.format_exc()[-2000:]}
        records.append(rec)
        if out_dir is not None:        # after every case: a timeout still leaves the cases done so far
            _write(out_dir, device, cupy.__version__, records, saved)
        print(f"{case.name:22s} {'OK ' if rec['ok'] else 'FAIL'} " +
              ("; ".join(f"{b['buffer']}: {b['detail']}" for b in rec.get("buffers", [])) or rec.get("error", "")),
              flush=True)
    if out_dir is not None:
        _write(out_dir, device, cupy.__version__, records, saved)
    return records


def _write(out_dir: Path, device: str, cupy_version: str, records: list, saved: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_ok = sum(r["ok"] for r in records)
    same = sum(r.get("ptx") == "same PTX as shipped" for r in records)
    lines = [f"PTX emulator vs GPU, bit-exactness ({device}, CuPy {cupy_version}, {stamp})",
             f"PTX compiled on the GPU machine identical to the PTX compiled on the CPU machine: {same}/{len(records)}",
             f"{n_ok}/{len(records)} kernels agree (bit-identical; approximate-instruction outputs within 2 ulp)",
             ""]
    for r in records:
        detail = "; ".join(f"{b['buffer']}{'~' if b['approx'] else ''}: {b['detail']}" for b in r.get("buffers", []))
        lines.append(f"{r['case']:22s} {'OK  ' if r['ok'] else 'FAIL'} {detail or r.get('error', '')}")
    (out_dir / "emulator_bitexact.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "emulator_bitexact.json").write_text(json.dumps({"device": device, "date": stamp,
                                                                "records": records}, indent=1))
    np.savez_compressed(out_dir / "emulator_gpu_outputs.npz", **saved)


def recheck(out_dir: Path) -> int:
    """The current emulator against the GPU outputs recorded by an earlier run; writes *_recheck.txt."""
    recorded = np.load(out_dir / "emulator_gpu_outputs.npz")
    device = json.loads((out_dir / "emulator_bitexact.json").read_text())
    lines, n_ok = [], 0
    for case in C.CASES:
        emu = C.run_emulated(case, compile_cuda(case.source.read_text()).ptx)
        parts, ok = [], True
        for spec in case.args:
            b = C.parse_arg(spec)
            if isinstance(b, C.Buffer) and b.role != "in":
                good, detail = C.compare(case, b, emu[b.name], recorded[f"{case.name}/{b.name}"].tobytes())
                ok &= good
                parts.append(f"{b.name}{'~' if b.name in case.approx else ''}: {detail}")
        n_ok += ok
        lines.append(f"{case.name:22s} {'OK  ' if ok else 'FAIL'} {'; '.join(parts)}")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = [f"PTX emulator (this CPU, {stamp}) vs the outputs recorded on {device['device']} ({device['date']})",
            f"{n_ok}/{len(C.CASES)} kernels agree: written buffers bit-identical, or (~ approximate instructions) "
            f"each element within 2 ulp or within the instruction's absolute bound ({C.ABS_BOUND:.3g}; tanh: relative 2^-11)",
            ""]
    text = "\n".join(head + lines) + "\n"
    (out_dir / "emulator_bitexact_recheck.txt").write_text(text)
    print(text)
    return 0 if n_ok == len(C.CASES) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--ptx-dir", type=Path, default=None, help="PTX compiled elsewhere, to cross-check")
    ap.add_argument("--write-ptx", type=Path, default=None, help="only compile the corpus PTX into this folder")
    ap.add_argument("--recheck", action="store_true",
                    help="no GPU: compare the emulator with the recorded GPU outputs (emulator_gpu_outputs.npz)")
    args = ap.parse_args()
    if args.recheck:
        sys.exit(recheck(args.out))
    if args.write_ptx:
        args.write_ptx.mkdir(parents=True, exist_ok=True)
        for case in C.CASES:
            (args.write_ptx / f"{case.name}.ptx").write_text(compile_cuda(case.source.read_text()).ptx)
        return
    records = run_all(args.out, args.ptx_dir)
    sys.exit(0 if all(r["ok"] for r in records) else 1)


if __name__ == "__main__":
    main()
