"""Numerics and anti-cheat checks of one variant on one device, case by case. Each case runs three
launches in the same guarded buffers:
  1. seeded inputs, outputs poisoned: guards intact, inputs unchanged bit for bit, every output
     element written, outputs within the op's tolerance of the float64 reference (an index param's
     first element is the top of its range: a device-scalar length n is S);
  2. fresh inputs, outputs left as launch 1 wrote them: the fresh answer, not the previous one (an
     index param's first element the bottom of its range in about half of the cases);
  3. the same inputs as launch 2, outputs re-poisoned with another pattern: the same bits as launch 2
     (unless the variant declares itself non-deterministic).
Every failure is a sentence that says what happened, where."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kreg.registry.preflight import preflight
from kreg.registry.schema import Op, Variant

from .devices import Device, LaunchFailure, ptx_module
from .chunks import chunk_map
from .dtypes import OVERFLOW, decode, exact, is_float, itemsize, storage
from .inputs import (host_scalars, input_values, make_inputs, output_params, poison_bits, poison_bytes,
                     readable_params, to_bytes)
from kreg.checker.ptx.bind import BindError, bind, buffer_sizes
from .plugins import reference_for
from .shapes import is_ragged
from .tolerance import bound as tolerance_bound, error_scales, tolerance_for

COMPARE_CHUNK = 1 << 16      # elements per chunk of compare(): its float64 temporaries stay in cache


@dataclass
class CaseResult:
    case: str
    dims: dict[str, int]
    ragged: bool
    failures: list[str] = field(default_factory=list)
    outputs: dict[str, dict] = field(default_factory=dict)   # per output: max_abs_err, max_rel_err, worst

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_json(self) -> dict:
        return {"case": self.case, "dims": self.dims, "ragged": self.ragged, "pass": self.ok,
                "failures": self.failures, "outputs": self.outputs}


def _index(shape, flat: int) -> list[int]:
    return [int(i) for i in np.unravel_index(flat, shape)] if shape else []


def within(got: np.ndarray, want: np.ndarray, tolerance: dict, scale: np.ndarray | None = None,
           overflow: float = np.inf) -> np.ndarray:
    """Elementwise: equal (NaN matching NaN, infinities matching), or within atol + rtol * |want| (plus the
    accumulation term of tolerance.bound where the tolerance has a gamma and a scale is given), or an
    infinity where the tolerance reaches the dtype's overflow threshold (rounds_to_inf)."""
    with np.errstate(invalid="ignore", over="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        bound = tolerance_bound(tolerance, np.abs(want), scale)
        return same | (np.abs(got - want) <= bound) | rounds_to_inf(got, want, bound, overflow)


def rounds_to_inf(got: np.ndarray, want: np.ndarray, bound: np.ndarray, overflow: float) -> np.ndarray:
    """got is the infinity of want's sign and some value within the bound of want rounds to it in the
    dtype (|want| + bound >= the dtype's overflow threshold, dtypes.OVERFLOW): the correctly rounded
    answer of a value the dtype cannot hold (e.g. f16 beyond 65504)."""
    with np.errstate(invalid="ignore"):
        return np.isinf(got) & (np.sign(got) == np.sign(want)) & (np.abs(want) + bound >= overflow)


def compare(name: str, got: np.ndarray, want: np.ndarray, dtype: str, tolerance: dict | None,
            ignore: np.ndarray | None = None, scale: np.ndarray | None = None) -> tuple[list[str], dict]:
    """Failures (sentences) and error statistics of one output against its reference, every element
    (in float64, chunk by chunk on a thread pool); elements in `ignore` (already reported as never
    written) count as neither right nor wrong; `scale` (sum_k |term_k| per element) with the tolerance's
    gamma adds the accumulation term of tolerance.bound."""
    shape = want.shape
    got, want = got.reshape(-1), np.asarray(want, dtype=np.float64).reshape(-1)
    ignore = ignore.reshape(-1) if ignore is not None and ignore.any() else None
    scale = (np.asarray(scale, dtype=np.float64).reshape(-1)
             if scale is not None and tolerance and tolerance.get("gamma") else None)
    stats = {"max_abs_err": 0.0, "max_rel_err": 0.0, "worst": None, "elements": int(want.size)}
    if want.size == 0:
        return [], stats
    if not is_float(dtype):
        if ignore is not None:
            got = np.where(ignore, want, got)
        bad = np.flatnonzero(got != want)
        if bad.size:
            i = int(bad[0])
            return [f"{name}: {bad.size} of {want.size} elements differ from the reference (integers must be "
                    f"exact); first at {_index(shape, i)}: got {int(got[i])}, want {want[i]:g}"], stats
        return [], stats
    if tolerance is None:
        return [f"{name}: the op gives no tolerance for {dtype}"], stats
    atol, rtol = tolerance["atol"], tolerance["rtol"]
    overflow = OVERFLOW.get(dtype, np.inf)
    parts = chunk_map(lambda lo, hi: _compare_chunk(got, want, ignore, tolerance, scale, lo, hi, overflow), want.size,
                      COMPARE_CHUNK)
    stats["max_abs_err"] = max(p[0] for p in parts)
    stats["max_rel_err"] = max(p[1] for p in parts)
    worst = max(parts, key=lambda p: p[2])          # the first chunk holding the largest ratio
    w, g = worst[3], worst[4]
    stats["worst"] = {"index": _index(shape, w), "got": g, "want": float(want[w]), "err_over_tol": worst[2]}
    bad, nan = sum(p[5] for p in parts), sum(p[6] for p in parts)
    if not bad:
        return [], stats
    why = []
    if nan:
        first_nan = next(p[7] for p in parts if p[6])
        why.append(f"{name}: {nan} NaN where the reference is finite, first at {_index(shape, first_nan)}")
    if bad > nan:
        acc = f" + {tolerance['gamma'] * (1 + rtol):.3g} sum|terms|" if scale is not None else ""
        why.append(f"{name}: {bad} of {want.size} elements outside atol={atol:g} rtol={rtol:g}{acc}; worst at "
                   f"{stats['worst']['index']}: got {g:.6g}, want {want[w]:.6g} "
                   f"(error {worst[2]:.3g}x the tolerance)")
    return why, stats


ULP_AT_ONE = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f32": 2.0 ** -23, "f64": 2.0 ** -52}
NEAR_CONSTANT = 0.01       # an output whose spread is below this fraction of the reference's


def near_constant(name: str, got: np.ndarray, want, dtype: str, ignore: np.ndarray | None = None) -> list[str]:
    """An output that passed its tolerance while (nearly) constant where the reference varies by many
    ulps of the dtype: a constant (zeros, say) that passes only because the op's tolerance is loose
    beside the output's magnitude. A correct kernel's spread is the reference's to within twice the
    tolerance, so this fires only where the tolerance is about half the reference's spread or more."""
    if not is_float(dtype):
        return []
    got, want = np.asarray(got, np.float64).reshape(-1), np.asarray(want, np.float64).reshape(-1)
    keep = np.isfinite(want) & np.isfinite(got)
    if ignore is not None:
        keep &= ~np.asarray(ignore).reshape(-1)
    if np.count_nonzero(keep) < 16:
        return []
    g, w = got[keep], want[keep]
    step = max(1, g.size >> 20)                  # a strided sample of at most about 2^20 elements
    g, w = g[::step], w[::step]
    spread_w, spread_g = float(np.ptp(w)), float(np.ptp(g))
    if spread_w <= 64 * ULP_AT_ONE[dtype] * float(np.max(np.abs(w))) or spread_g > NEAR_CONSTANT * spread_w:
        return []
    return [f"{name}: near-constant output (every element within {spread_g:.3g} of {g[0]:.6g}) where the reference "
            f"varies over {spread_w:.3g} (from {w.min():.6g} to {w.max():.6g}): it passes only because the op's "
            "tolerance is loose beside the output's magnitude; compute the output"]


def _compare_chunk(got, want, ignore, tolerance, scale, lo: int, hi: int, overflow: float = np.inf) -> tuple:
    """(max abs err, max rel err, worst err/tol, its index, got there, elements out of tolerance,
    NaNs where the reference is finite, the first of those) over [lo, hi)."""
    w = want[lo:hi]
    g = got[lo:hi].astype(np.float64)
    if ignore is not None:
        np.copyto(g, w, where=ignore[lo:hi])
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(g - w)
        aw = np.abs(w)
        bound = tolerance_bound(tolerance, aw, None if scale is None else scale[lo:hi])
        if np.count_nonzero(err <= bound) == w.size:     # all within (so all finite): the common case
            ratio = np.divide(err, bound, out=np.zeros_like(err), where=bound > 0)   # bound 0: err 0
            k = int(np.argmax(ratio))
            rel = np.divide(err, aw, out=np.zeros_like(err), where=aw > 0)
            return float(err.max()), float(rel.max()), float(ratio[k]), lo + k, float(g[k]), 0, 0, -1
        same = (g == w) | (np.isnan(g) & np.isnan(w)) | rounds_to_inf(g, w, bound, overflow)
        ok = same | (err <= bound)
        finite = np.isfinite(err)
        max_abs = float(np.max(err, where=finite, initial=0.0))
        max_rel = float(np.max(err / aw, where=finite & (w != 0), initial=0.0))
        ratio = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err / np.where(bound > 0, bound, 0)))
    ratio = np.nan_to_num(ratio, nan=np.inf, posinf=np.inf)
    k = int(np.argmax(ratio))
    nan = np.isnan(g) & ~np.isnan(w)
    n_nan = int(np.count_nonzero(nan))
    return (max_abs, max_rel, float(ratio[k]), lo + k, float(g[k]), int(w.size - np.count_nonzero(ok)), n_nan,
            lo + int(np.argmax(nan)) if n_nan else -1)


class CaseRun:
    """The buffers of one case on one device, and the checks between launches."""

    def __init__(self, device: Device, module, variant: Variant, op: Op, dims: dict[str, int],
                 rng: np.random.Generator, references):
        self.device, self.module, self.v, self.op, self.dims, self.rng = device, module, variant, op, dims, rng
        self.references = references
        self.dtypes = {n: op.dtype_of(n, variant.types) for n in buffer_sizes(variant, op, dims) if n in op.params}
        self.dtypes |= {s.name: s.dtype for s in variant.scratch.values()}
        self.bufs = {n: device.alloc(n, size, rng) for n, size in buffer_sizes(variant, op, dims).items()}
        self.elements = sum(b.nbytes // itemsize(self.dtypes[n]) for n, b in self.bufs.items())
        self.bound = bind(variant, op, ptx_module(device, module), dims, {n: b.ptr for n, b in self.bufs.items()})
        self.snapshots: dict[str, object] = {}   # read-only inputs as written, for integrity()
        self.changed: set[str] = set()            # read-only inputs integrity() found written
        self._outputs: dict[str, np.ndarray] = {}

    def write_inputs(self, bits: dict[str, np.ndarray]) -> None:
        self._outputs.clear()
        for n, x in bits.items():
            data = to_bytes(x)
            self.device.write(self.bufs[n], data)
            if self.op.params[n].role != "inout":
                self.snapshots[n] = self.device.snapshot(self.bufs[n], data)
                self.changed.discard(n)

    def poison(self, which: int) -> None:
        self._outputs.clear()
        for n in output_params(self.op):
            if self.op.params[n].role == "out":
                self.device.write(self.bufs[n], poison_bytes(self.dtypes[n], self.bufs[n].nbytes, which))
        for n in self.v.scratch:
            self.device.write(self.bufs[n], self.rng.integers(0, 256, self.bufs[n].nbytes, dtype=np.uint8))

    def launch(self, observe: bool = False, atomic_seed: int | None = None) -> None:
        """All launches of the variant; `observe` asks the device to record every access (the CPU
        can; it costs time, so only the first launch of a case does); `atomic_seed` asks it to apply
        colliding atomics in a seeded order (the CPU can; a GPU's order varies by itself)."""
        self.device.observe = observe
        self.device.atomic_seed = atomic_seed
        self.device.work_elements = self.elements
        self._outputs.clear()
        for bl in self.bound:
            self.device.launch(self.module, bl)
        self.device.sync()

    def output_bits(self, name: str) -> np.ndarray:
        """The output's bits after the last launch (read from the device once per launch)."""
        if name not in self._outputs:
            self._outputs[name] = self.device.read(self.bufs[name]).view(storage(self.dtypes[name]))
        return self._outputs[name]

    def integrity(self, when: str) -> list[str]:
        """Guards untouched everywhere, and every read-only input bit for bit as written."""
        why = [f"{when}: {w}" for w in self.device.stray_accesses()]
        why += [f"{when}: {w}" for b in self.bufs.values() for w in self.device.guard_damage(b)]
        for n in readable_params(self.op):
            if self.op.params[n].role == "inout":
                continue
            diff = self.device.changed(self.bufs[n], self.snapshots[n], storage(self.dtypes[n]))
            if diff.size:
                self.changed.add(n)
                shape = self.op.shape(n, self.dims)
                why.append(f"{when}: input {n} ({self.op.params[n].role}) was written: {diff.size} of "
                           f"{int(np.prod(shape))} elements changed, first at {_index(shape, int(diff[0]))}")
        return why

    def unwritten(self, when: str, which: int) -> list[str]:
        why = []
        for n in output_params(self.op):
            if self.op.params[n].role != "out":
                continue
            bits = self.output_bits(n)
            left = np.flatnonzero(bits == poison_bits(self.dtypes[n], which))
            if left.size:
                shape = self.op.shape(n, self.dims)
                why.append(f"{when}: output {n}: {left.size} of {bits.size} elements never written (still hold the "
                           f"poison), first at {_index(shape, int(left[0]))}, last at {_index(shape, int(left[-1]))}")
        return why

    def reference(self, bits: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        name = self.op.reference
        fn = self.references.get(name) if self.references is not None else reference_for(name)
        if fn is None:
            raise KeyError(f"no float64 reference named {self.op.reference!r}")
        with self.device.arrays() as xp:
            return self.device.to_host(fn(**input_values(bits, self.op, self.v), **self.dims, **host_scalars(self.op),
                                          xp=xp))

    def scales(self, bits: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """sum_k |term_k| per output element, for an op with an accumulation entry (else empty)."""
        with self.device.arrays() as xp:
            return self.device.to_host(error_scales(self.op, input_values(bits, self.op, self.v), self.dims,
                                                    host_scalars(self.op), xp))

    def check_outputs(self, when: str, want: dict[str, np.ndarray], poison: int, stats: dict | None = None,
                      scales: dict | None = None) -> list[str]:
        why = []
        scales = scales or {}
        for n in output_params(self.op):
            if n not in want:
                why.append(f"{when}: the reference gives no value for output {n}")
                continue
            bits = self.output_bits(n)
            unwritten = (bits == poison_bits(self.dtypes[n], poison)) if self.op.params[n].role == "out" else None
            w, st = compare(n, exact(bits, self.dtypes[n]), np.asarray(want[n]).reshape(self.op.shape(n, self.dims)),
                            self.dtypes[n], tolerance_for(self.op, self.dtypes[n], self.dims), unwritten,
                            None if n not in scales else np.asarray(scales[n]).reshape(self.op.shape(n, self.dims)))
            why += [f"{when}: {x}" for x in w]
            if not w:
                why += [f"{when}: {x}" for x in near_constant(n, decode(bits, self.dtypes[n]), want[n], self.dtypes[n],
                                                               unwritten)]
            if stats is not None:
                stats[n] = st
        return why


def run_case(device: Device, module, variant: Variant, op: Op, case: str, dims: dict[str, int],
             rng: np.random.Generator, references=None) -> CaseResult:
    res = CaseResult(case, dict(dims), is_ragged(op, dims))
    try:
        run = CaseRun(device, module, variant, op, dims, rng, references)
    except (BindError, ValueError) as e:      # ValueError: an expression (ExprError) or a size
        res.failures.append(f"cannot bind the launch: {e}")
        return res
    try:
        a = make_inputs(op, variant, dims, rng, draw=0)
        run.write_inputs(a)
        run.poison(0)
        run.launch(observe=True)
        res.failures += run.integrity("launch 1")
        res.failures += run.unwritten("launch 1", 0)
        want_a, scale_a = run.reference(a), run.scales(a)
        res.failures += run.check_outputs("launch 1", want_a, 0, res.outputs, scale_a)
        first = {n: run.output_bits(n) for n in output_params(op)}

        b = make_inputs(op, variant, dims, rng, draw=1)
        run.write_inputs(b)
        run.launch()
        res.failures += run.integrity("launch 2 (fresh inputs)")
        want_b = run.reference(b)
        fresh = run.check_outputs("launch 2 (fresh inputs)", want_b, 0, None, run.scales(b))
        res.failures += fresh
        if fresh:
            res.failures += _stale(run, op, first, want_a, want_b, scale_a)
        second = {n: run.output_bits(n) for n in output_params(op)}

        # the same inputs again: inout params (the kernel wrote them) and any read-only input it wrote;
        # the others still hold b bit for bit (integrity() compared them)
        run.write_inputs({n: x for n, x in b.items() if op.params[n].role == "inout" or n in run.changed})
        run.poison(1)
        run.launch(atomic_seed=int(rng.integers(1, 2**31)))     # colliding atomics in another order
        res.failures += run.integrity("launch 3 (repeat)")
        res.failures += run.unwritten("launch 3 (repeat)", 1)
        for n in output_params(op):
            now = run.output_bits(n)
            diff = np.flatnonzero((now != second[n]) & (now != poison_bits(run.dtypes[n], 1)))
            if diff.size and variant.deterministic:
                shape = op.shape(n, dims)
                res.failures.append(f"launch 3 (repeat): output {n} is not deterministic: two identical launches gave "
                                    f"different bits at {diff.size} of {second[n].size} elements, first at "
                                    f"{_index(shape, int(diff[0]))} (declare `deterministic: false` if intended)")
    except LaunchFailure as e:
        res.failures.append(f"launch failed: {e}")
    except Exception as e:   # a reference or binding problem: report, never crash the run
        res.failures.append(f"{type(e).__name__}: {e}")
    return res


def _stale(run: CaseRun, op: Op, first: dict, want_a: dict, want_b: dict, scale_a: dict) -> list[str]:
    """Launch 2 is wrong: say so if it returned launch 1's answer where the fresh answer differs."""
    why = []
    for n in output_params(op):
        if n not in want_a or n not in want_b:
            continue
        now, dt = run.output_bits(n), run.dtypes[n]
        wa, wb = np.asarray(want_a[n], np.float64).reshape(-1), np.asarray(want_b[n], np.float64).reshape(-1)
        right_before = decode(first[n], dt) == wa
        right_now = decode(now, dt) == wb
        if is_float(dt) and dt in op.tolerance:
            sa = scale_a.get(n)
            tol, ovf = tolerance_for(op, dt, run.dims), OVERFLOW[dt]
            right_before = within(decode(first[n], dt), wa, tol,
                                  None if sa is None else np.asarray(sa, np.float64).reshape(-1), ovf)
            right_now = within(decode(now, dt), wb, tol, None, ovf)     # e.g. both answers overflow the dtype
        changed = wa != wb
        stale = np.flatnonzero(changed & right_before & ~right_now & (now == first[n]))
        if stale.size:
            why.append(f"launch 2 (fresh inputs): output {n} still holds the previous launch's answer at "
                       f"{stale.size} of {int(changed.sum())} elements whose answer changed (cached across launches)")
    return why


@dataclass
class Numerics:
    status: str                  # "pass" | "fail" | "not-run"
    cases: list[CaseResult]
    device: str
    reason: str = ""
    refused: list[str] = field(default_factory=list)   # preflight: why no case was launched

    def failures(self) -> list[str]:
        return self.refused + [f"case {c.case} {c.dims}: {f}" for c in self.cases for f in c.failures]

    def as_json(self) -> dict:
        return {"status": self.status, "device": self.device, "reason": self.reason,
                "cases_run": [c.case for c in self.cases], "cases": [c.as_json() for c in self.cases],
                "refused": self.refused}


def run_numerics(device: Device, ptx: str, variant: Variant, op: Op, cases: dict[str, dict[str, int]],
                 seed: int = 0, references=None) -> Numerics:
    """Every case, in order; a launch failure (fault, trap, step limit) ends the run there. Nothing
    runs if preflight finds a reason to refuse the variant (geometry beyond the CUDA limits at some
    case, float atomics in a variant declared deterministic)."""
    refused = preflight(variant, op, cases, ptx)
    if refused:
        return Numerics("fail", [], device.describe(), "refused before launching", refused)
    module = device.load_variant(variant, op, ptx)
    results = []
    for i, (name, dims) in enumerate(cases.items()):
        r = run_case(device, module, variant, op, name, dims, np.random.default_rng([seed, i]), references)
        results.append(r)
        if any(f.startswith("launch failed") for f in r.failures):
            break
    status = "pass" if results and all(r.ok for r in results) else "fail"
    return Numerics(status, results, device.describe(), "" if results else "no cases to run")
