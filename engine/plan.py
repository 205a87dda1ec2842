"""The launch plan: which variant runs for each op the engine needs, resolved from the results store
by a profile (safe-only / fastest) for this device and dtype, loaded as the exact PTX whose sha256 the
store names (and, per named case where another qualifying variant was timed faster, that variant for
launches at exactly the case's dims); and binding an op's params and dims to concrete buffers
(checker/ptx/bind.py)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kreg import runtime
from kreg.checker.ptx import parse as P
from kreg.checker.ptx.bind import BindError, bind, buffer_sizes
from kreg.checker.ptx.compile import CompileError, cached_ptx, compile_cuda
from kreg.checker.ptx.pdl import waits_first
from kreg.checker.prover.prove import CHECKER_VERSION
from kreg.registry import trust
from kreg.registry.catalog import Catalog, Entry, load_catalog
from kreg.registry.lockfile import Lock, LockError, check as check_lock
from kreg.registry.profiles import resolve
from kreg.registry.schema import Op, narrowed
from kreg.registry.store import Store, StoreError

from .errors import EngineError

DECODE_OPS = ("embedding", "rms_norm", "gemv", "qk_norm_rope_kv", "attention_decode", "attention_merge",
              "add_rms_norm", "silu_mul", "argmax", "decode_advance")
PREFILL_OPS = ("embedding", "rms_norm", "gemm", "qk_norm_rope_prefill", "attention_prefill", "add_rms_norm",
               "silu_mul", "gemv", "argmax")
ENGINE_OPS = tuple(dict.fromkeys(PREFILL_OPS + DECODE_OPS))
# Ops a plan may take (optional=...) where a qualifying variant exists, and the decode step then uses.
# gemv_swiglu (the SwiGLU fused into the down projection, in place of silu_mul + gemv) is not taken by
# default: on the H100 it made the Qwen3-4B step 400 us slower (each block recomputes the activation
# over all of K; bench/results/engine_pdl_gpu.txt).
FUSIONS = ("gemv_swiglu",)
# The fused decode step (taken by default where all three resolve): a layer is 7 launches instead of 10,
# [rms_norm_gemv qkv] [qk_norm_rope_kv] [attention_decode] [attention_merge] [gemv_residual o]
# [rms_norm_gemv_swiglu gate_up] [gemv_residual down] (the norms, residual adds and the activation ride in
# the gemvs: no add_rms_norm, silu_mul), and the step ends [rms_norm] [gemv lm_head]: the plain gemv
# streams the lm_head at the copy rate, rms_norm_gemv 11% slower (H100, bench/results/fuse_gpu.txt).
FUSED_DECODE = ("rms_norm_gemv", "gemv_residual", "rms_norm_gemv_swiglu")
OPTIONAL_OPS: tuple[str, ...] = FUSED_DECODE


def fused_decode(plan) -> bool:
    """Whether a decode step of this plan takes the fused path (launches.fused_layers)."""
    return all(op in plan.ops for op in FUSED_DECODE)


def decode_ops(plan) -> tuple[str, ...]:
    """The ops a decode step of this plan launches."""
    if fused_decode(plan):
        return tuple(op for op in DECODE_OPS if op not in ("add_rms_norm", "silu_mul")) + FUSED_DECODE
    if "gemv_swiglu" in plan.ops:
        return tuple(op for op in DECODE_OPS if op != "silu_mul") + ("gemv_swiglu",)
    return DECODE_OPS


@dataclass(frozen=True)
class Launch:
    """One bound launch, ready for Kernel.launch (or a graph capture)."""
    op: str
    variant: str
    kernel: runtime.Kernel
    config: runtime.LaunchConfig
    args: tuple

    def run(self, stream=None):
        return self.kernel.launch(self.config, *self.args, stream=stream)

    @property
    def pdl_ready(self) -> bool:
        """Whether this launch may carry the PDL attribute: its kernel's PTX executes griddepcontrol.wait
        before any memory access (checker/ptx/pdl.py), so starting it early cannot break the stream order."""
        return _pdl_ready(self.kernel)

    def with_pdl(self) -> Launch:
        """This launch with the PDL attribute where its kernel is pdl_ready, else unchanged."""
        if not self.pdl_ready or runtime.PDL in self.config.attributes:
            return self
        c = self.config
        return replace(self, config=runtime.LaunchConfig(c.grid, c.block, c.shared, c.attributes | {runtime.PDL}))


def _pdl_ready(kernel) -> bool:
    parsed = getattr(kernel.module, "parsed", None)
    if not isinstance(parsed, P.Module):        # a vendor library's routine
        return False
    return waits_first(parsed.kernel(kernel.entry))


@dataclass
class OpKernel:
    """One op's chosen variant, loaded on the device."""
    entry: Entry
    op: Op
    module: runtime.Module
    why: str = ""
    scratch: dict = field(default_factory=dict)       # dims key -> {scratch name: Buffer}
    by_dims: dict = field(default_factory=dict)       # dims key -> the OpKernel that runs there instead
    by_class: list = field(default_factory=list)      # (registry.shape_classes.ShapeClass, OpKernel) in its range

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def pdl_ready(self) -> bool:
        """Whether every kernel this variant (and each one chosen for some dims) launches waits first
        (checker/ptx/pdl.py)."""
        return all(_pdl_ready(self.module.kernel(ln.entry)) for ln in self.entry.variant.launches) and \
            all(k.pdl_ready for k in self.by_dims.values()) and all(k.pdl_ready for _, k in self.by_class)

    def at(self, dims: dict) -> OpKernel:
        """The kernel that runs at these dims: the one chosen for exactly them, else the one chosen for
        their shape class, else this default."""
        k = self.by_dims.get(_dims_key(dims))
        return k or next((k for sc, k in self.by_class if sc.contains(dims)), self)

    def launches(self, dims: dict, pointers: dict, scalars: dict | None = None) -> list[Launch]:
        """The launches at these dims (of the variant chosen for them); `pointers` maps the op's tensor
        params to addresses (buffers or ints); scratch buffers are allocated once per dims and kept."""
        if (k := self.at(dims)) is not self:
            return k.launches(dims, pointers, scalars)
        v = self.entry.variant
        ptrs = {k: (p.ptr if hasattr(p, "ptr") else int(p)) for k, p in pointers.items()}
        if v.scratch:
            key = _dims_key(dims)
            if key not in self.scratch:
                sizes = buffer_sizes(v, self.op, dims)
                self.scratch[key] = {s: self.module.device.alloc(sizes[s], f"{v.name}.{s}") for s in v.scratch}
            ptrs |= {k: b.ptr for k, b in self.scratch[key].items()}
        try:
            bound = bind(v, self.op, self.module.parsed, dims, ptrs, scalars)
        except BindError as e:
            raise EngineError(f"{self.op.name} ({v.name}) cannot run at {dims}: {e}") from None
        return [Launch(self.op.name, v.name, self.module.kernel(b.entry), runtime.LaunchConfig(b.grid, b.block, b.shared),
                       b.args) for b in bound]


@dataclass
class Plan:
    profile: str                      # "safe-only", "fastest" or "explicit" (named variants, tests only)
    device: runtime.Device
    dtype: str
    ops: dict[str, OpKernel]

    def __getitem__(self, op: str) -> OpKernel:
        return self.ops[op]

    def report(self) -> list[dict]:
        """Which variant runs for each op (what `kreg run` prints and --json reports); `pdl`: whether
        its decode launches may carry the PDL attribute (every kernel of it waits first); `by_dims`: the
        variants that run instead at some exact dims; `by_class`: those that run instead for other dims of a
        shape class."""
        def row(k: OpKernel) -> dict:
            return {"variant": k.name, "safety": k.entry.variant.safety, "hash": k.entry.hash,
                    "ptx_sha256": k.module.sha256, "why": k.why}
        return [{"op": op, **row(k), "pdl": k.pdl_ready,
                 "by_dims": [{"dims": dict(key), **row(kk)} for key, kk in sorted(k.by_dims.items())],
                 "by_class": [{"class": sc.name, **row(kk)} for sc, kk in k.by_class]}
                for op, k in sorted(self.ops.items())]


def _dims_key(dims: dict) -> tuple:
    return tuple(sorted(dims.items()))


def _types_match(types: dict, dtype: str) -> bool:
    """A variant of the model's dtype, or of an op with no type variable (decode_advance)."""
    return not types or set(types.values()) == {dtype}


def _dtype_of(e: Entry) -> str:
    return next(iter(e.variant.types.values()))


def _load(dev: runtime.Device, e: Entry, ptx_sha256: str | None) -> runtime.Module:
    """The exact PTX the store names: from the content-addressed PTX cache by its sha256, or, on a miss,
    compiled here and its sha256 checked (runtime.Device.load checks the bytes again); or a vendor
    library's routines."""
    v = e.variant
    if v.vendor:
        from kreg.runtime import vendor
        try:
            return vendor.load(dev, v.library, _dtype_of(e))
        except runtime.LoadError as ex:
            raise EngineError(f"{v.name}: {ex}", exit_code=3) from None
    if ptx_sha256 is not None and (ptx := cached_ptx(ptx_sha256)) is not None:
        return dev.load(ptx, sha256=ptx_sha256)
    try:
        c = compile_cuda(v.source_path.read_text(), v.source_path.name, v.options)
    except (CompileError, OSError) as ex:
        raise EngineError(f"{v.name}: cannot compile {v.source_path}: {ex}", exit_code=3) from None
    if ptx_sha256 is not None and c.sha256 != ptx_sha256:
        raise EngineError(f"{v.name}: this machine's NVRTC emits PTX {c.sha256[:12]}, not the {ptx_sha256[:12]} "
                          "that was verified; run `kreg verify` here")
    return dev.load(c.ptx, sha256=ptx_sha256 or c.sha256)


def device_name(dev: runtime.Device) -> str:
    return "cpu" if dev.kind == "cpu" else "gpu"


def _not_capturable(e: Entry) -> str | None:
    """A vendor routine cannot run inside the decode step's CUDA graph: CuPy refuses cuBLAS calls while a
    stream captures (found on the H100, tests/engine/test_engine_gpu.py). Its ops that run there take a kernel."""
    if e.variant.vendor and e.op in DECODE_OPS + FUSIONS + FUSED_DECODE:
        return "a vendor routine cannot be recorded in the decode step's CUDA graph (CuPy refuses cuBLAS in a capture)"
    return None


def from_profile(profile: str, dev: runtime.Device, dtype: str, ops=ENGINE_OPS, catalog: Catalog | None = None,
                 store: Store | None = None, optional=OPTIONAL_OPS, unusable=_not_capturable) -> Plan:
    """The plan a profile resolves from the results store; an EngineError naming the ops without a
    qualifying variant (and the `kreg verify` to run) when it is incomplete. The optional ops join the
    plan where the profile resolves them. unusable(entry): why this caller cannot run a variant, or None."""
    catalog = catalog or load_catalog()
    name = device_name(dev)
    try:
        store = store or Store()
        res = resolve(profile, name, catalog, store, CHECKER_VERSION, unusable=unusable)
    except StoreError as e:
        raise EngineError(str(e), exit_code=3) from None
    verify = f"kreg verify --device {name}"
    if not res.device_kinds:
        raise EngineError(f"the results store ({store.path}) holds no verify results for --device {name}: run "
                          f"`{verify}` first", exit_code=3)
    chosen, missing = {}, {}
    for op in tuple(ops) + tuple(o for o in optional if o not in ops):
        cands = [c for c in res.choices if c.op == op and _types_match(c.types, dtype)]
        c = next((c for c in cands if c.variant), None)
        if c is None:
            why = "; ".join(f"{n}: {w}" for cc in cands for n, w in cc.passed_over.items()) or \
                f"no {dtype} variant of {op} is registered"
            missing[op] = why
            continue
        e = next(e for e in catalog.entries if e.hash == c.hash)
        if trust.verdict(store, e.hash, ptx_sha256=c.ptx_sha256, device_kind=dev.describe()) is None:
            missing[op] = f"{c.variant}: verified on another device kind, not on {dev.describe()}"
            continue
        chosen[op] = (e, c)
    for op in optional:                 # an optional op without a qualifying variant is left out
        missing.pop(op, None)
    if missing:
        lines = "\n".join(f"  {op}: {why}" for op, why in missing.items())
        raise EngineError(f"profile {profile} cannot run on {dev.describe()} ({dtype}): no qualifying variant for "
                          f"{', '.join(missing)}:\n{lines}\nrun `{verify} " + " ".join(f"--op {o}" for o in missing)
                          + "`", exit_code=1)
    modules: dict[str, runtime.Module] = {}

    def kernel(e: Entry, ptx_sha256: str, why: str) -> OpKernel:
        if e.hash not in modules:
            modules[e.hash] = _load(dev, e, ptx_sha256)
        return OpKernel(e, narrowed(catalog.ops[e.op], e.variant), modules[e.hash], why)

    ops = {}
    for op, (e, c) in chosen.items():
        ops[op] = kernel(e, c.ptx_sha256, c.why)
        for case, cc in c.by_case.items():     # only what was verified on this very device kind
            if trust.verdict(store, cc.hash, ptx_sha256=cc.ptx_sha256, device_kind=dev.describe()) is not None:
                e2 = next(e2 for e2 in catalog.entries if e2.hash == cc.hash)
                ops[op].by_dims[_dims_key(cc.dims)] = kernel(e2, cc.ptx_sha256, f"at {case}: {cc.why}")
        for name, cc in c.by_class.items():    # likewise
            if store.latest(cc.hash, "verdict", ptx_sha256=cc.ptx_sha256, device_kind=dev.describe()) is not None:
                e2 = next(e2 for e2 in catalog.entries if e2.hash == cc.hash)
                ops[op].by_class.append((cc.shape_class, kernel(e2, cc.ptx_sha256, f"for {name}: {cc.why}")))
    return Plan(profile, dev, dtype, ops)


def from_lock(lock: Lock, dev: runtime.Device, dtype: str, ops=ENGINE_OPS, catalog: Catalog | None = None,
              store: Store | None = None, optional=OPTIONAL_OPS, unusable=_not_capturable) -> Plan:
    """The plan a lock file pins (registry/lockfile.py): exactly its variants and PTX, each entry held
    against the registry and the results store first (a changed source, another checker's proof, a
    missing or different verdict, another device kind: an EngineError, exit code 1). An op the lock
    does not name is refused too, unless optional."""
    catalog = catalog or load_catalog()
    name = device_name(dev)
    if lock.device != name:
        raise EngineError(f"the lock file pins variants for --device {lock.device}, not {name}", exit_code=1)
    chosen, missing = {}, []
    for op in tuple(ops) + tuple(o for o in optional if o not in ops):
        le = next((le for le in lock.entries if le.op == op and le.case is None and _types_match(le.types, dtype)), None)
        if le is None:
            if op not in optional:
                missing.append(op)
            continue
        chosen[op] = [le] + [c for c in lock.by_case(op, le.types)]
    if missing:
        raise EngineError(f"the lock file names no {dtype} variant for {', '.join(missing)}: run `kreg lock --device "
                          f"{name} " + " ".join(f"--op {o}" for o in missing) + "` again after `kreg verify`", exit_code=1)
    try:
        check_lock(lock, catalog, store or Store(), CHECKER_VERSION, dev.describe(),
                   entries=[le for les in chosen.values() for le in les])
    except LockError as e:
        raise EngineError(f"lock file refused: {e}", exit_code=1) from None
    except StoreError as e:
        raise EngineError(f"the results store cannot be read: {e}", exit_code=3) from None
    by_hash = {e.hash: e for e in catalog.entries}
    modules: dict[str, runtime.Module] = {}

    def kernel(le, why: str) -> OpKernel:
        e = by_hash[le.variant_hash]
        if unusable and (why_not := unusable(e)):
            raise EngineError(f"lock file refused: {le.op} {le.variant}: {why_not}", exit_code=1)
        if e.hash not in modules:
            modules[e.hash] = _load(dev, e, le.ptx_sha256)
        return OpKernel(e, narrowed(catalog.ops[e.op], e.variant), modules[e.hash], why)

    out = {}
    for op, (le, *cases) in chosen.items():
        out[op] = kernel(le, f"pinned by the lock file ({lock.profile}, {le.verdict})")
        for c in cases:
            out[op].by_dims[_dims_key(c.dims)] = kernel(c, f"at {c.case}: pinned by the lock file")
    return Plan(f"lock:{lock.profile}", dev, dtype, out)


def explicit(dev: runtime.Device, dtype: str, variants: dict[str, str] | None = None, ops=ENGINE_OPS,
             catalog: Catalog | None = None, optional=OPTIONAL_OPS) -> Plan:
    """A plan of named variants (default: the safe one of each op for dtype, the optional ops included
    where registered) that does not consult the store: for tests of the engine's numerics, never what
    `kreg run` uses."""
    catalog = catalog or load_catalog()
    out = {}
    for op in tuple(ops) + tuple(o for o in optional if o not in ops):
        name = (variants or {}).get(op)
        cands = [e for e in catalog.entries if e.op == op and _types_match(e.variant.types, dtype)
                 and (e.name == name if name else e.variant.safety == "safe")]
        if not cands and op in optional and not name:
            continue
        if not cands:
            raise EngineError(f"no {dtype} variant {name or '(safe)'} of op {op} in the registry")
        e = sorted(cands, key=lambda e: e.name)[0]
        out[op] = OpKernel(e, narrowed(catalog.ops[op], e.variant), _load(dev, e, None), "named explicitly (not checked in the store)")
    return Plan("explicit", dev, dtype, out)
