"""Op and variant metadata: YAML -> validated dataclasses, with errors that name file, key path and
what was expected. A malformed file raises SchemaError, never anything else."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from .source_policy import source_problem

from .expr import Expr, ExprError, parse, parse_condition
from .limits import PROOF_BUDGET_MAX_MS, PROOF_BUDGET_MS, SOURCE_MAX_BYTES
from .preflight import launch_problems
from .yamlsafe import YamlRefused, load_metadata

# dtype name -> (bytes, numpy name, CUDA C++ type)
DTYPES = {
    "f32": (4, "float32", "float"), "f16": (2, "float16", "__half"), "bf16": (2, "bfloat16", "__nv_bfloat16"),
    "f64": (8, "float64", "double"), "i8": (1, "int8", "int8_t"), "u8": (1, "uint8", "uint8_t"),
    "i32": (4, "int32", "int"), "u32": (4, "uint32", "unsigned"), "i64": (8, "int64", "long long"),
    "u64": (8, "uint64", "unsigned long long"),
}
ROLES = ("in", "out", "inout", "scalar")
SAFETY = ("safe", "unsafe", "vendor")      # vendor: a library routine, no source (registry/vendor.py)
NAME_RE = r"[A-Za-z_][A-Za-z0-9_]*"          # matched whole (re.fullmatch): no trailing newline
VARIANT_NAME_RE = r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}"   # also a file name: no leading dot
MAX_DIM = 2**40


class SchemaError(ValueError):
    def __init__(self, file, path: str, message: str):
        self.file, self.path, self.message = str(file), path, message
        super().__init__(f"{file}: {path or '<top>'}: {message}")


class _V:
    """A cursor over a YAML document that knows its file and key path."""

    def __init__(self, file, data, path=""):
        self.file, self.data, self.path = file, data, path

    def fail(self, msg, key=None):
        p = self.path if key is None else (f"{self.path}.{key}" if self.path else str(key))
        raise SchemaError(self.file, p, msg)

    def sub(self, key, data=None):
        p = f"{self.path}.{key}" if self.path else str(key)
        if isinstance(key, int):
            p = f"{self.path}[{key}]"
        return _V(self.file, self.data[key] if data is None else data, p)

    def mapping(self, required=(), optional=()):
        if not isinstance(self.data, dict):
            self.fail(f"expected a mapping, got {_kind(self.data)}")
        for k in self.data:
            if not isinstance(k, str):
                self.fail(f"keys must be strings, got {k!r}")
        allowed = set(required) | set(optional)
        for k in required:
            if k not in self.data:
                self.fail(f"missing required key {k!r}")
        extra = sorted(set(self.data) - allowed)
        if extra and allowed:
            self.fail(f"unknown key {extra[0]!r} (allowed: {', '.join(sorted(allowed))})")
        return self

    def get(self, key, default=None):
        return self.data.get(key, default) if isinstance(self.data, dict) else default

    def string(self, key, default=None, choices=None, pattern=None):
        v = self.data.get(key, default)
        if v is None and default is None and key not in self.data:
            return None
        if not isinstance(v, str) or not v:
            self.fail(f"expected a non-empty string, got {_kind(v)}", key)
        if choices and v not in choices:
            self.fail(f"expected one of {', '.join(choices)}, got {v!r}", key)
        if pattern and not re.fullmatch(pattern, v):
            self.fail(f"expected an identifier, got {v!r}", key)
        return v

    def expr(self, key=None, cond=False) -> Expr:
        v = self.data if key is None else self.data.get(key)
        try:
            return (parse_condition if cond else parse)(v)
        except ExprError as e:
            self.fail(str(e), key)


def _kind(v):
    return "nothing" if v is None else type(v).__name__


def _check_names(v: _V, e: Expr, known: set[str], key=None):
    bad = sorted(e.names() - known)
    if bad:
        v.fail(f"unknown name {bad[0]!r} in {e.text!r} (known: {', '.join(sorted(known)) or 'none'})", key)


@dataclass(frozen=True)
class Param:
    name: str
    role: str
    dtype: str              # a concrete dtype or a type variable of the op
    shape: tuple[Expr, ...] = ()
    values: tuple[Expr, Expr] | None = None   # lo <= v <= hi, for index tensors and device scalars
    default: float | int | None = None        # for scalars


@dataclass(frozen=True)
class Op:
    name: str
    doc: str
    dims: dict[str, tuple[int, int]]
    types: dict[str, tuple[str, ...]]
    params: dict[str, Param]
    requires: tuple[Expr, ...]
    reference: str
    tolerance: dict[str, dict[str, float]]
    cases: dict[str, dict[str, int]]
    flops: Expr | None
    path: str
    traffic: dict[str, Expr] = field(default_factory=dict)   # param -> elements a launch moves in all
    raw: dict = field(repr=False, default_factory=dict)
    # outputs that are long fp32 sums of products: {"terms": Expr, "c": float, "u": float}; the tolerance
    # then adds gamma * sum|terms| per element, gamma = c n u / (1 - c n u) (conformance/tolerance.py)
    accumulation: dict | None = None

    def dtype_of(self, param: str, types: dict[str, str]) -> str:
        d = self.params[param].dtype
        return types.get(d, d)

    def shape(self, param: str, dims: dict[str, int]) -> tuple[int, ...]:
        return tuple(int(e(dims)) for e in self.params[param].shape)

    def dims_ok(self, dims: dict[str, int]) -> list[str]:
        """Why these dims are not allowed (empty list if they are)."""
        why = [f"{k}={dims.get(k)} outside [{lo}, {hi}]" for k, (lo, hi) in self.dims.items()
               if not (isinstance(dims.get(k), int) and lo <= dims[k] <= hi)]
        if not why:
            for r in self.requires:
                try:
                    if not r(dims):
                        why.append(f"requirement {r.text} does not hold")
                except ExprError as e:
                    why.append(f"requirement cannot be evaluated: {e}")
        return why

    def traffic_bytes(self, dims: dict[str, int], types: dict[str, str]) -> int:
        """Bytes moved: every tensor read once, outputs written once, inout read and written; a param
        named in the op's `traffic` mapping moves that many elements in all, reads and writes together,
        instead (a gather reads T rows of a V-row table; a KV write touches T rows of the cache)."""
        total = 0
        for p in self.params.values():
            if p.role == "scalar" and not p.shape:
                continue
            n = 1
            for s in self.shape(p.name, dims):
                n *= s
            moves = 2 if p.role == "inout" else 1
            if p.name in self.traffic:
                n, moves = int(self.traffic[p.name](dims)), 1
            total += n * DTYPES[self.dtype_of(p.name, types)][0] * moves
        return total


def load_op(path: Path) -> Op:
    path = Path(path)
    v = _V(path, _load_yaml(path))
    v.mapping(required=("op", "dims", "params", "reference", "tolerance", "cases"),
              optional=("doc", "types", "requires", "flops", "traffic", "accumulation"))
    name = v.string("op", pattern=NAME_RE)
    doc = v.get("doc") or ""
    dims: dict[str, tuple[int, int]] = {}
    vd = v.sub("dims").mapping()
    if not vd.data:
        vd.fail("an op needs at least one dim")
    for k, r in vd.data.items():
        if not (isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r)
                and 0 <= r[0] <= r[1] <= MAX_DIM):
            vd.fail(f"expected [lo, hi] integers with 0 <= lo <= hi <= 2**40, got {r!r}", k)
        dims[k] = (r[0], r[1])
    types: dict[str, tuple[str, ...]] = {}
    if "types" in v.data:
        vt = v.sub("types").mapping()
        for k, lst in vt.data.items():
            if k in DTYPES or k in dims:
                vt.fail("a type variable must not shadow a dtype or a dim", k)
            if not (isinstance(lst, list) and lst and all(isinstance(x, str) and x in DTYPES for x in lst)):
                vt.fail(f"expected a list of dtypes from {', '.join(DTYPES)}", k)
            types[k] = tuple(lst)
    known = set(dims)
    params: dict[str, Param] = {}
    vp = v.sub("params").mapping()
    if not vp.data:
        vp.fail("an op needs at least one param")
    for pname, _ in vp.data.items():
        pv = vp.sub(pname).mapping(required=("role", "dtype"), optional=("shape", "values", "default"))
        role = pv.string("role", choices=ROLES)
        dtype = pv.string("dtype", choices=tuple(DTYPES) + tuple(types))
        shape = ()
        if "shape" in pv.data:
            sv = pv.sub("shape")
            if not isinstance(sv.data, list):
                sv.fail(f"expected a list of dim expressions, got {_kind(sv.data)}")
            shape = tuple(sv.sub(i).expr() for i in range(len(sv.data)))
            for i, e in enumerate(shape):
                _check_names(sv.sub(i), e, known)
        elif role != "scalar":
            pv.fail("a tensor param needs a shape", "shape")
        values = None
        if "values" in pv.data:
            vv = pv.sub("values")
            if not (isinstance(vv.data, list) and len(vv.data) == 2):
                vv.fail("expected [lo, hi] (inclusive) as expressions over dims")
            values = (vv.sub(0).expr(), vv.sub(1).expr())
            for i, e in enumerate(values):
                _check_names(vv.sub(i), e, known)
            if DTYPES.get(dtype, ("", "float"))[1][0] not in "iu":
                vv.fail("value preconditions are for integer params only")
        default = pv.get("default")
        if default is not None and (isinstance(default, bool) or not isinstance(default, (int, float))):
            pv.fail("expected a number", "default")
        if not re.fullmatch(NAME_RE, pname):
            vp.fail("param names must be identifiers", pname)
        params[pname] = Param(pname, role, dtype, shape, values, default)
    for both in sorted(set(params) & set(dims)):     # a kernel argument that is also a dim: the dim itself
        p = params.pop(both)
        if p.role != "scalar" or p.shape or p.values or p.default is not None or p.dtype not in DTYPES \
                or DTYPES[p.dtype][1][0] not in "iu":
            v.fail(f"{both!r} is both a dim and a param: a param named like a dim must be an integer scalar "
                   "(role: scalar, an integer dtype, no shape, values or default); it is passed as the dim's value")
    requires = []
    if "requires" in v.data:
        vr = v.sub("requires")
        if not isinstance(vr.data, list):
            vr.fail("expected a list of conditions")
        for i in range(len(vr.data)):
            e = vr.sub(i).expr(cond=True)
            _check_names(vr.sub(i), e, known)
            requires.append(e)
    reference = v.string("reference", pattern=NAME_RE)
    tol: dict[str, dict[str, float]] = {}
    vtol = v.sub("tolerance").mapping()
    for dt, t in vtol.data.items():
        if dt not in DTYPES:
            vtol.fail(f"expected a dtype from {', '.join(DTYPES)}", dt)
        tv = vtol.sub(dt).mapping(required=("atol", "rtol"))
        for k in ("atol", "rtol"):
            x = tv.data[k]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x < 1:
                tv.fail(f"expected a number in [0, 1), got {x!r}", k)
        tol[dt] = {"atol": float(tv.data["atol"]), "rtol": float(tv.data["rtol"])}
    cases: dict[str, dict[str, int]] = {}
    vc = v.sub("cases").mapping()
    if not vc.data:
        vc.fail("an op needs at least one named case")
    op_partial = Op(name, doc, dims, types, params, tuple(requires), reference, tol, {}, None, str(path))
    for cname, cdims in vc.data.items():
        cv = vc.sub(cname).mapping(required=tuple(dims))
        for k, x in cdims.items():
            if type(x) is not int:
                cv.fail(f"expected an integer, got {_kind(x)}", k)
        why = op_partial.dims_ok(cdims)
        if why:
            cv.fail("case not allowed by the op: " + "; ".join(why))
        cases[cname] = dict(cdims)
    flops = None
    if "flops" in v.data:
        flops = v.expr("flops")
        _check_names(v, flops, known, "flops")
    traffic: dict[str, Expr] = {}
    if "traffic" in v.data:
        vtr = v.sub("traffic").mapping()
        for pname in vtr.data:
            if pname not in params or (params[pname].role == "scalar" and not params[pname].shape):
                vtr.fail(f"expected a tensor param of the op, got {pname!r}", pname)
            traffic[pname] = vtr.expr(pname)
            _check_names(vtr, traffic[pname], known, pname)
    accumulation = None
    if "accumulation" in v.data:
        va = v.sub("accumulation").mapping(required=("terms", "c", "u"))
        terms = va.expr("terms")
        _check_names(va, terms, known, "terms")
        for k, top in (("c", 1e3), ("u", 1.0)):
            x = va.data[k]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x < top:
                va.fail(f"expected a number in (0, {top:g}), got {x!r}", k)
        accumulation = {"terms": terms, "c": float(va.data["c"]), "u": float(va.data["u"])}
    op = Op(name, doc, dims, types, params, tuple(requires), reference, tol, cases, flops, str(path), traffic,
            v.data, accumulation)
    _evaluate_at_cases(vc, op, [(f"params.{p.name}.shape", e) for p in params.values() for e in p.shape]
                       + [(f"traffic.{n}", e) for n, e in traffic.items()] + [("flops", e) for e in (flops,) if e]
                       + ([("accumulation.terms", accumulation["terms"])] if accumulation else []))
    _evaluate_at_cases(vc, op, [(f"params.{p.name}.values", e) for p in params.values() for e in (p.values or ())],
                       nonneg=False)
    return op


def _evaluate_at_cases(v: _V, op: Op, exprs: list[tuple[str, Expr]], nonneg=True) -> None:
    """Every expression evaluates at every named case (no division by zero, no runaway values) and,
    where nonneg, to a non-negative size."""
    for cname, dims in op.cases.items():
        for where, e in exprs:
            try:
                x = e(dims)
            except ExprError as err:
                v.fail(f"case {cname} {dims}: {where} cannot be evaluated: {err}")
            if nonneg and x < 0:
                v.fail(f"case {cname} {dims}: {where} = {e.text} is negative ({x})")


@dataclass(frozen=True)
class Arg:
    """One kernel argument: a param of the op (pointer or scalar) or an integer expression over dims."""
    param: str | None = None
    expr: Expr | None = None
    ctype: str = "i32"


@dataclass(frozen=True)
class Scratch:
    """A temporary buffer a multi-launch variant owns (e.g. per-block partials of a two-stage reduction)."""
    name: str
    dtype: str
    shape: tuple[Expr, ...]


@dataclass(frozen=True)
class Launch:
    entry: str
    args: tuple[Arg, ...]
    grid: tuple[Expr, ...]
    block: tuple[Expr, ...]
    shared: Expr

    def geometry(self, dims: dict[str, int]):
        """(grid, block, dynamic shared bytes) for these dims, each dim list padded to 3."""
        g = [int(e(dims)) for e in self.grid] + [1] * (3 - len(self.grid))
        b = [int(e(dims)) for e in self.block] + [1] * (3 - len(self.block))
        return tuple(g), tuple(b), int(self.shared(dims))


@dataclass(frozen=True)
class Variant:
    op: str
    name: str
    safety: str
    source: str               # file name, relative to the YAML's folder
    types: dict[str, str]
    launches: tuple[Launch, ...]   # run in order on one stream
    scratch: dict[str, Scratch]
    options: tuple[str, ...]
    deterministic: bool
    provenance: dict
    path: str                 # the YAML file
    raw: dict = field(repr=False, default_factory=dict)
    library: str = ""         # vendor variants only: the library whose routine runs (no source)
    proof_budget_ms: int = PROOF_BUDGET_MS   # `proof: {budget_ms}`: the prover's budget for this variant
    requires: tuple[Expr, ...] = ()          # `requires:`: conditions on the dims the variant adds to its op's

    def dims_problems(self, dims: dict[str, int]) -> list[str]:
        """Why the variant's own requirements reject these dims (empty list if they hold)."""
        why = []
        for r in self.requires:
            try:
                if not r(dims):
                    why.append(f"variant requirement {r.text} does not hold")
            except ExprError as e:
                why.append(f"variant requirement cannot be evaluated: {e}")
        return why

    @property
    def source_path(self) -> Path:
        if self.library:
            raise ValueError(f"{self.name} is a {self.library} routine: it has no source")
        return Path(self.path).parent / self.source

    @property
    def vendor(self) -> bool:
        return self.safety == "vendor"

    @property
    def entry(self) -> str:
        return self.launches[0].entry

    def scratch_shape(self, name: str, dims: dict[str, int]) -> tuple[int, ...]:
        return tuple(int(e(dims)) for e in self.scratch[name].shape)


ALLOWED_OPTIONS = ("-O", "--use_fast_math", "-use_fast_math", "--fmad=", "-D", "--extra-device-vectorization",
                   "--ftz=", "--prec-div=", "--prec-sqrt=", "-lineinfo", "--maxrregcount=",
                   "--gpu-architecture=compute_90a")   # sm_90a: Hopper warpgroup MMA (wgmma), setmaxnreg
LAUNCH_KEYS = ("entry", "args", "launch")


def narrowed(op: Op, variant: Variant) -> Op:
    """The op as this variant takes it: the op's requirements and the variant's own (`requires:`,
    conjoined), with the named cases those allow (skipped_cases names the others)."""
    if not variant.requires:
        return op
    have = {r.text for r in op.requires}
    extra = tuple(r for r in variant.requires if r.text not in have)
    return replace(op, requires=op.requires + extra,
                   cases={n: c for n, c in op.cases.items() if not variant.dims_problems(c)})


def skipped_cases(op: Op, variant: Variant) -> dict[str, str]:
    """The op's named cases the variant's requirements exclude, each with why."""
    return {n: "; ".join(why) for n, c in op.cases.items() if (why := variant.dims_problems(c))}


def _load_requires(v: _V, op: Op) -> tuple[Expr, ...]:
    """A variant's `requires:`: conditions over the op's dims, conjoined with the op's; at least one of the
    op's named cases must satisfy them (conformance runs those)."""
    if "requires" not in v.data:
        return ()
    vr = v.sub("requires")
    if not isinstance(vr.data, list) or not vr.data:
        vr.fail("expected a non-empty list of conditions over the op's dims")
    out = []
    for i in range(len(vr.data)):
        e = vr.sub(i).expr(cond=True)
        _check_names(vr.sub(i), e, set(op.dims))
        out.append(e)
    probe = Variant(op.name, "", "safe", "", {}, (), {}, (), True, {}, "", requires=tuple(out))
    if not any(not probe.dims_problems(c) for c in op.cases.values()):
        vr.fail(f"no named case of op {op.name} satisfies these requirements: conformance would run nothing")
    return tuple(out)


def _load_launch(v: _V, op: Op, scratch: dict[str, Scratch]) -> Launch:
    """One launch: `entry`, `args` and `launch: {grid, block, shared}` keys of the mapping at v."""
    entry = v.string("entry", pattern=NAME_RE)
    known = set(op.dims)
    buffers = set(op.params) | set(scratch)
    args = []
    va = v.sub("args")
    if not isinstance(va.data, list) or not va.data:
        va.fail("expected a non-empty list of kernel arguments")
    for i, a in enumerate(va.data):
        av = va.sub(i)
        if isinstance(a, str) and a in buffers:
            args.append(Arg(param=a))
            continue
        ctype = "i32"
        if isinstance(a, dict):
            av.mapping(required=("expr",), optional=("type",))
            ctype = av.string("type", default="i32", choices=("i32", "u32", "i64", "u64"))
            e = av.expr("expr")
        else:
            e = av.expr()
        _check_names(av, e, known | buffers)
        bad = e.names() & buffers
        if bad:
            av.fail(f"param {sorted(bad)[0]!r} cannot appear inside an expression")
        args.append(Arg(expr=e, ctype=ctype))
    vl = v.sub("launch").mapping(required=("grid", "block"), optional=("shared",))
    geo = {}
    for k in ("grid", "block"):
        gv = vl.sub(k)
        lst = gv.data if isinstance(gv.data, list) else [gv.data]
        if not 1 <= len(lst) <= 3:
            gv.fail("expected 1 to 3 expressions")
        exprs = tuple(_V(v.file, x, f"{gv.path}[{i}]").expr() for i, x in enumerate(lst))
        for e in exprs:
            _check_names(gv, e, known)
        geo[k] = exprs
    shared = vl.expr("shared") if "shared" in vl.data else parse(0)
    _check_names(vl, shared, known, "shared")
    return Launch(entry, tuple(args), geo["grid"], geo["block"], shared)


def load_variant(path: Path, ops: dict[str, Op]) -> Variant:
    path = Path(path)
    v = _V(path, _load_yaml(path))
    if isinstance(v.data, dict) and v.data.get("safety") == "vendor":
        return _load_vendor(v, path, ops)
    common = ("op", "name", "safety", "source")
    optional = ("types", "compile", "provenance", "deterministic", "doc", "proof", "requires")
    if isinstance(v.data, dict) and "launches" in v.data:
        v.mapping(required=common + ("launches",), optional=optional + ("scratch",))
    else:
        v.mapping(required=common + LAUNCH_KEYS, optional=optional)
    opname = v.string("op", pattern=NAME_RE)
    if opname not in ops:
        v.fail(f"unknown op {opname!r} (known: {', '.join(sorted(ops)) or 'none'})", "op")
    op = ops[opname]
    name = v.string("name", pattern=VARIANT_NAME_RE)
    safety = v.string("safety", choices=SAFETY)
    source = v.string("source")
    if "/" in source or "\\" in source or source.startswith("."):
        v.fail("expected a file name beside the YAML (no folders)", "source")
    src = path.parent / source
    if src.is_symlink():
        v.fail("the source must be a file beside the YAML, not a symbolic link", "source")
    if not src.is_file():
        v.fail(f"source file {source!r} not found beside {path.name}", "source")
    if src.stat().st_size > SOURCE_MAX_BYTES:
        v.fail(f"refused: source larger than {SOURCE_MAX_BYTES} bytes (1 MiB)", "source")
    try:
        why = source_problem(src.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        why = f"cannot read: {type(e).__name__}"
    if why:
        v.fail(f"refused: {why}", "source")
    types = _load_types(v, op)
    requires = _load_requires(v, op)
    scratch: dict[str, Scratch] = {}
    if "scratch" in v.data:
        vs = v.sub("scratch").mapping()
        for sname in vs.data:
            sv = vs.sub(sname).mapping(required=("dtype", "shape"))
            if not re.fullmatch(NAME_RE, sname) or sname in op.params or sname in op.dims:
                vs.fail("expected an identifier that is not a param or dim of the op", sname)
            dtype = sv.string("dtype", choices=tuple(DTYPES))
            shp = sv.sub("shape")
            if not isinstance(shp.data, list) or not shp.data:
                shp.fail("expected a list of dim expressions")
            shape = tuple(shp.sub(i).expr() for i in range(len(shp.data)))
            for i, e in enumerate(shape):
                _check_names(shp.sub(i), e, set(op.dims))
            scratch[sname] = Scratch(sname, dtype, shape)
    if "launches" in v.data:
        vls = v.sub("launches")
        if not isinstance(vls.data, list) or not vls.data:
            vls.fail("expected a non-empty list of launches (entry, args, launch)")
        launches = tuple(_load_launch(vls.sub(i).mapping(required=LAUNCH_KEYS), op, scratch)
                         for i in range(len(vls.data)))
        where = vls
    else:
        launches = (_load_launch(v, op, scratch),)
        where = v.sub("args")
    passed = {a.param for ln in launches for a in ln.args}
    unbound = [p for p in op.params if p not in passed and op.params[p].role != "scalar"]
    if unbound:
        where.fail(f"tensor param {unbound[0]!r} of op {opname} is not passed to the kernel")
    options: tuple[str, ...] = ()
    if "compile" in v.data:
        vco = v.sub("compile").mapping(optional=("options",))
        opts = vco.get("options", [])
        if not (isinstance(opts, list) and all(isinstance(o, str) for o in opts)):
            vco.fail("expected a list of strings", "options")
        for o in opts:
            if not o.startswith(ALLOWED_OPTIONS):
                vco.fail(f"compile option {o!r} is not allowed (allowed prefixes: {' '.join(ALLOWED_OPTIONS)})",
                         "options")
        options = tuple(opts)
    det, prov = _det_prov(v)
    variant = Variant(opname, name, safety, source, types, launches, scratch, options, det, prov, str(path), v.data,
                      proof_budget_ms=_proof_budget(v), requires=requires)
    op = narrowed(op, variant)        # the cases the variant runs at
    _evaluate_at_cases(v, op, [(f"scratch.{s.name}.shape", e) for s in scratch.values() for e in s.shape])
    _evaluate_at_cases(v, op, [(f"launch {ln.entry} argument", a.expr) for ln in launches for a in ln.args
                               if a.expr is not None], nonneg=False)
    why = launch_problems(variant, op, op.cases)
    if why:
        more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
        at = vls if "launches" in v.data else v.sub("launch")
        at.fail(f"launch geometry outside the CUDA limits: {why[0]}{more}")
    return variant


def _load_vendor(v: _V, path: Path, ops: dict[str, Op]) -> Variant:
    """A vendor variant: op, name, `library`, types; its one launch calls the library's routine for the
    op with the arguments registry/vendor.py lists."""
    from .vendor import LIBRARIES, ROUTINES, routine
    v.mapping(required=("op", "name", "safety", "library"), optional=("types", "provenance", "doc", "deterministic"))
    opname = v.string("op", pattern=NAME_RE)
    if opname not in ops:
        v.fail(f"unknown op {opname!r} (known: {', '.join(sorted(ops)) or 'none'})", "op")
    op = ops[opname]
    name = v.string("name", pattern=VARIANT_NAME_RE)
    library = v.string("library", choices=LIBRARIES)
    if (library, opname) not in ROUTINES:
        v.fail(f"{library} has no routine for op {opname} (it has: "
               f"{', '.join(o for lib, o in ROUTINES if lib == library)})", "library")
    types = _load_types(v, op)
    buffers, dims = ROUTINES[(library, opname)]
    args = tuple(Arg(param=a) for a in buffers) + tuple(Arg(expr=parse(d)) for d in dims)
    launch = Launch(routine(library, opname), args, (parse(1),), (parse(1),), parse(0))
    det, prov = _det_prov(v)
    return Variant(opname, name, "vendor", "", types, (launch,), {}, (), det, prov, str(path), v.data, library)


def _proof_budget(v: _V) -> int:
    """`proof: {budget_ms: N, used: F}`: the prover's budget for the variant (ms of solver work, default
    PROOF_BUDGET_MS) and, informational, the share of it the variant's proof uses (a test keeps it true)."""
    if "proof" not in v.data:
        return PROOF_BUDGET_MS
    vp = v.sub("proof").mapping(optional=("budget_ms", "used"))
    ms = vp.get("budget_ms", PROOF_BUDGET_MS)
    if not isinstance(ms, int) or isinstance(ms, bool) or not 1000 <= ms <= PROOF_BUDGET_MAX_MS:
        vp.fail(f"expected an integer number of ms in [1000, {PROOF_BUDGET_MAX_MS}]", "budget_ms")
    used = vp.get("used", 0.0)
    if not isinstance(used, (int, float)) or isinstance(used, bool) or not 0 <= used <= 1:
        vp.fail("expected the share of the budget the proof uses, in [0, 1]", "used")
    return ms


def _det_prov(v: _V) -> tuple[bool, dict]:
    """The `deterministic` flag (default true) and the `provenance` mapping of a variant."""
    det = v.get("deterministic", True)
    if not isinstance(det, bool):
        v.fail("expected true or false", "deterministic")
    prov = v.get("provenance", {}) or {}
    if not isinstance(prov, dict):
        v.fail("expected a mapping (author, generator, date, from)", "provenance")
    return det, prov


def _load_types(v: _V, op: Op) -> dict[str, str]:
    types: dict[str, str] = {}
    if "types" in v.data:
        vt = v.sub("types").mapping()
        for k, t in vt.data.items():
            if k not in op.types:
                vt.fail(f"op {op.name} has no type variable {k!r}", k)
            if t not in op.types[k]:
                vt.fail(f"expected one of {', '.join(op.types[k])}, got {t!r}", k)
            types[k] = t
    missing = sorted(set(op.types) - set(types))
    if missing:
        v.fail(f"type variable {missing[0]!r} of op {op.name} must be bound", "types")
    return types


def _load_yaml(path: Path):
    try:
        return load_metadata(path)
    except (OSError, UnicodeDecodeError) as e:
        raise SchemaError(path, "", f"cannot read: {e}") from None
    except YamlRefused as e:
        raise SchemaError(path, "", f"refused: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise SchemaError(path, "", f"not valid YAML{where}: {getattr(e, 'problem', e)}") from None
