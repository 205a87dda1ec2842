"""The PTX front end shared by the emulator and the prover: parse the PTX NVRTC 13 emits for sm_90
into a small IR (module variables, kernels, params, registers, labels, predicated instructions), then
build each kernel's control-flow graph and immediate post-dominators."""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

TYPES = {"pred": 1, "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
         "s8": 8, "s16": 16, "s32": 32, "s64": 64, "f16": 16, "f16x2": 32, "bf16": 16, "bf16x2": 32, "f32": 32,
         "f64": 64, "tf32": 32, "e4m3x2": 16, "e5m2x2": 16}
SPECIAL = {"%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
           "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge", "%clock", "%clock64",
           "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%warpsize", "%gridid", "%dynamic_smem_size", "%total_smem_size",
           "%cluster_ctarank", "%cluster_nctarank", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
           "%is_explicit_cluster"}
SPECIAL_BITS = {"%clock64": 64, "%globaltimer": 64, "%gridid": 64}   # every other special register is 32 bits
# Special registers a thread may read twice with two values (PTX ISA): clocks and timers, and %smid and %warpid,
# which change when a preempted thread is rescheduled.
CLOCKS = {"%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"}
VOLATILE_SPECIAL = CLOCKS | {"%smid", "%warpid"}
CLUSTER_SPECIAL = {"%cluster_ctarank", "%cluster_nctarank", "%clusterid", "%nclusterid", "%cluster_ctaid",
                   "%cluster_nctaid", "%is_explicit_cluster"}
# Every opcode the front end accepts. Anything else is a ParseError naming it and its line.
OPCODES = {
    "ld", "ldu", "st", "cvta", "mov", "add", "sub", "mul", "mad", "mul24", "mad24", "div", "rem", "abs", "neg",
    "min", "max", "and", "or", "xor", "not", "shl", "shr", "setp", "selp", "slct", "bra", "ret", "exit", "bar",
    "barrier", "shfl", "atom", "red", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "cvt",
    "popc", "clz", "brev", "bfe", "bfi", "prmt", "copysign", "testp", "membar", "fence", "vote", "activemask",
    "cnot", "lop3", "sad", "mad.wide", "shf", "set", "prefetch", "prefetchu", "cp", "redux", "match", "nanosleep",
    "ld.param", "isspacep", "madc", "addc", "subc", "mul.wide", "trap", "bfind", "fns", "szext", "bmsk", "dp4a", "dp2a",
    "mma", "ldmatrix", "griddepcontrol", "mapa", "wgmma", "setmaxnreg",
}


class ParseError(ValueError):
    def __init__(self, msg: str, line: int | None = None, text: str = ""):
        self.line, self.text = line, text
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"PTX {where}{msg}" + (f"  [{text.strip()}]" if text else ""))


# ---- operands -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reg:
    name: str


@dataclass(frozen=True)
class Imm:
    value: int | float
    is_float: bool = False
    raw: tuple[int, int] | None = None      # a 0f/0d literal's IEEE bits and width, exactly (a NaN's payload too)


@dataclass(frozen=True)
class Special:
    name: str          # e.g. "%tid"
    dim: str | None    # "x" | "y" | "z" | None


@dataclass(frozen=True)
class Sym:
    name: str          # a param, a variable or a label


@dataclass(frozen=True)
class Addr:
    base: Reg | Sym | None
    offset: int = 0


@dataclass(frozen=True)
class Vec:
    items: tuple       # of Reg | Imm | Sink


@dataclass(frozen=True)
class Sink:
    pass


@dataclass(frozen=True)
class NotPred:         # a negated predicate source operand: !%p
    reg: Reg


@dataclass(frozen=True)
class PredPair:        # setp's optional second destination: %p|%q
    a: Reg
    b: Reg


Operand = Reg | Imm | Special | Sym | Addr | Vec | Sink | PredPair | NotPred


# ---- instructions and module ------------------------------------------------------------------------

@dataclass
class Instr:
    op: str                       # base opcode: "ld", "add", "setp", ...
    mods: tuple[str, ...]         # the dotted modifiers in order: ("global", "nc", "v4", "f32")
    args: tuple                   # operands in order (destination first where there is one)
    pred: Reg | None = None       # guard predicate
    neg: bool = False             # guard is @!%p
    line: int = 0
    text: str = ""
    index: int = -1               # position in the kernel's instruction list

    @property
    def type(self) -> str | None:
        """The last type modifier (cvt has two: dst first; see .types)."""
        ts = self.types
        return ts[-1] if ts else None

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(m for m in self.mods if m in TYPES)

    def has(self, *mods: str) -> bool:
        return any(m in self.mods for m in mods)

    @property
    def space(self) -> str | None:
        for m in self.mods:
            if m in ("global", "shared", "local", "const", "param", "generic"):
                return m
            if m == "shared::cta":         # .shared's default sub-space, spelled out
                return "shared"
        return None

    @property
    def vector(self) -> int:
        for m in self.mods:
            if m in ("v2", "v4", "v8"):
                return int(m[1])
        return 1

    def __str__(self):
        return self.text.strip()


@dataclass
class Variable:
    name: str
    space: str            # "global" | "shared" | "const" | "local"
    type: str
    align: int
    count: int | None     # elements; None for `[]` (extern dynamic shared)
    init: bytes | None = None
    extern: bool = False

    @property
    def size(self) -> int:
        return (self.count or 0) * max(TYPES[self.type] // 8, 1)


@dataclass
class Param:
    name: str
    type: str
    size: int             # bytes
    align: int


@dataclass
class Block:
    id: int
    start: int            # first instruction index
    end: int              # one past the last
    succs: list[int] = field(default_factory=list)
    preds: list[int] = field(default_factory=list)


@dataclass
class Kernel:
    name: str
    params: list[Param]
    regs: dict[str, str]                  # register name -> declared type
    instrs: list[Instr]
    labels: dict[str, int]                # label -> instruction index
    locals: dict[str, Variable]           # variables declared inside the body (.shared, .local)
    directives: dict[str, tuple[int, ...]]  # .maxntid / .reqntid / ...
    blocks: list[Block] = field(default_factory=list)
    block_of: list[int] = field(default_factory=list)   # instruction index -> block id
    ipdom: list[int] = field(default_factory=list)      # block id -> immediate post-dominator (-1: exit)

    def reg_bits(self, name: str) -> int:
        return TYPES[self.regs[name]]

    def target(self, label: str) -> int:
        if label not in self.labels:
            raise ParseError(f"branch to unknown label {label!r} in {self.name}")
        return self.labels[label]


@dataclass
class Module:
    version: tuple[int, int]
    target: str
    address_size: int
    globals: dict[str, Variable]
    kernels: dict[str, Kernel]

    def kernel(self, name: str) -> Kernel:
        if name not in self.kernels:
            raise ParseError(f"no kernel {name!r} in this PTX (entries: {', '.join(self.kernels) or 'none'})")
        return self.kernels[name]


# ---- lexing -----------------------------------------------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_REG_DECL = re.compile(r"^\.reg\s+\.(\w+)\s+(.+)$")
_VAR_DECL = re.compile(r"^((?:\.(?:visible|extern|weak|common)\s+)*)\.(global|shared|const|local)\s+(.*)$")
_PARAM = re.compile(r"^\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)(?:\[(\d+)\])?$")
_LINE_DIRECTIVE = re.compile(r"^(\s*\.(?:version|target|address_size|file|loc)\b[^;\n]*)$", re.M)
_INT = re.compile(r"^-?(0[xX][0-9a-fA-F]+|\d+)[uU]?$")


_PLAIN = re.compile(r"[^\n(){};:]+")     # a run of characters _statements only appends (or skips, leading blanks)
_LABEL_SO_FAR = re.compile(r"\s*[$\w]+")


def _statements(body: str):
    """Split text into (line number, statement) on ';', '{' and '}' (kept as statements), and labels.
    (A run of ordinary characters is taken at once: a statement's leading blanks skipped, the rest kept.)"""
    line = 1
    cur, cur_line = [], 1
    depth_paren = depth_vec = 0
    i = 0
    n = len(body)
    plain = _PLAIN.match
    while i < n:
        m = plain(body, i)
        if m is not None:
            run, i = m[0], m.end()
            if not cur:
                run = run.lstrip()
                if not run:
                    continue
                cur_line = line
            cur.append(run)
            continue
        c = body[i]
        if c == "\n":
            line += 1
        if c == "(":
            depth_paren += 1
        elif c == ")":
            depth_paren -= 1
        if c == "{" and depth_paren == 0 and _in_operands("".join(cur)):
            depth_vec += 1
            cur.append(c)
        elif c == "}" and depth_vec:
            depth_vec -= 1
            cur.append(c)
        elif c in ";{}" and depth_paren == 0:
            s = "".join(cur).strip()
            if s:
                yield cur_line, s
            if c in "{}":
                yield line, c
            cur, cur_line = [], line
        elif c == ":" and depth_paren == 0 and _LABEL_SO_FAR.fullmatch("".join(cur)):
            yield cur_line, "".join(cur).strip() + ":"
            cur, cur_line = [], line
        else:
            if not cur and c.isspace():
                cur_line = line + (1 if c == "\n" else 0)
            else:
                if not cur:
                    cur_line = line
                cur.append(c)
        i += 1
    s = "".join(cur).strip()
    if s:
        yield cur_line, s


def _in_operands(prefix: str) -> bool:
    """A '{' after an opcode starts a vector operand, not a scope (e.g. `mov.b32 {a, b}, %r1`)."""
    p = prefix.lstrip()
    if p.rstrip().endswith((",", "=")):
        return True
    return bool(re.match(r"^(@!?%?[\w$]+\s+)?[a-z][\w.:]*\s", p))


def _split_operands(s: str) -> list[str]:
    if not _NESTS.search(s):           # no brackets: the commas split it (a trailing empty piece dropped)
        out = [p.strip() for p in s.split(",")]
        if not out[-1]:
            out.pop()
        return out
    out, depth, cur = [], 0, []
    for c in s:
        if c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_NESTS = re.compile(r"[\[\]{}()]")


def parse_int(s: str) -> int:
    s = s.rstrip("uU")
    neg = s.startswith("-")
    s = s[1:] if neg else s
    v = int(s, 16) if s.lower().startswith("0x") else int(s, 8) if len(s) > 1 and s.startswith("0") else int(s)
    return -v if neg else v


_ADDR = re.compile(r"([%$\w.]+)?(?:\+?(-?(?:0[xX][0-9a-fA-F]+|\d+)))?")
_FLOAT_BITS = re.compile(r"0([fFdD])([0-9a-fA-F]+)")
_FLOAT = re.compile(r"-?\d+\.\d*(e[-+]?\d+)?")
_SYM = re.compile(r"[$\w]+")


def _operand(s: str, rename: dict[str, str], line: int, text: str):
    s = s.strip()
    if s[:1] == "%" and "|" not in s and (name := rename.get(s, s)).startswith("%"):
        return _named(name)            # a register or special register: no other form starts with %
    if s == "_":
        return Sink()
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].replace(" ", "")
        m = _ADDR.fullmatch(inner)
        if not m or not (m[1] or m[2]):
            raise ParseError(f"cannot parse address {s!r}", line, text)
        base = None
        if m[1]:
            b = rename.get(m[1], m[1])
            base = Reg(b) if b.startswith("%") else Sym(b)
        return Addr(base, parse_int(m[2]) if m[2] else 0)
    if s.startswith("{") and s.endswith("}"):
        return Vec(tuple(_operand(x, rename, line, text) for x in _split_operands(s[1:-1])))
    if s.startswith("!%"):
        return NotPred(Reg(rename.get(s[1:], s[1:])))
    if "|" in s:
        a, b = s.split("|")
        return PredPair(Reg(rename.get(a.strip(), a.strip())), Reg(rename.get(b.strip(), b.strip())))
    m = _FLOAT_BITS.fullmatch(s)
    if m:
        bits = int(m[2], 16)
        if m[1] in "fF":
            return Imm(struct.unpack("<f", struct.pack("<I", bits))[0], True, (bits, 32))
        return Imm(struct.unpack("<d", struct.pack("<Q", bits))[0], True, (bits, 64))
    if _INT.match(s):
        return Imm(parse_int(s))
    if _FLOAT.fullmatch(s):
        return Imm(float(s), True)
    name = rename.get(s, s)
    if name.startswith("%"):
        return _named(name)
    if _SYM.fullmatch(name):
        return Sym(name)
    raise ParseError(f"cannot parse operand {s!r}", line, text)


def _named(name: str):
    """A %name: a special register (%tid.x, ...) or a register."""
    base, _, dim = name.partition(".")
    if base in SPECIAL:
        return Special(base, dim or None)
    return Reg(name)


def _expand_regs(spec: str) -> list[str]:
    out = []
    for part in _split_operands(spec):
        m = re.fullmatch(r"([%\w$]+)<(\d+)>", part.strip())
        if m:
            out += [f"{m[1]}{i}" for i in range(int(m[2]))]
        else:
            out.append(part.strip())
    return out


def _variable(decl: str, line: int, text: str) -> Variable:
    m = _VAR_DECL.match(decl)
    if not m:
        raise ParseError("cannot parse variable declaration", line, text)
    extern = "extern" in m[1]
    space, rest = m[2], m[3]
    init = None
    if "=" in rest:
        rest, init_text = rest.split("=", 1)
        init_text = init_text.strip()
    else:
        init_text = None
    align = 0
    ma = re.search(r"\.align\s+(\d+)", rest)
    if ma:
        align = int(ma[1])
        rest = rest.replace(ma[0], "")
    mt = re.search(r"\.(\w+)\s+([$\w]+)\s*(?:\[(\d*)\])?\s*$", rest.strip())
    if not mt or mt[1] not in TYPES:
        raise ParseError("cannot parse variable declaration", line, text)
    typ, name = mt[1], mt[2]
    count = 1 if mt[3] is None else (int(mt[3]) if mt[3] else None)
    esize = max(TYPES[typ] // 8, 1)
    if init_text is not None:
        vals = [parse_int(x) if _INT.match(x.strip()) else x for x in _split_operands(init_text.strip("{} "))]
        if any(not isinstance(x, int) for x in vals):
            raise ParseError("only integer initialisers are supported", line, text)
        if count is None:
            count = len(vals)
        init = b"".join((x & ((1 << (8 * esize)) - 1)).to_bytes(esize, "little") for x in vals)
        init = init.ljust(count * esize, b"\0")
    return Variable(name, space, typ, align or esize, count, init, extern)


def _instruction(stmt: str, rename: dict[str, str], line: int) -> Instr:
    pred, neg = None, False
    m = re.match(r"^@(!?)(%?[\w$]+)\s+", stmt)
    body = stmt
    if m:
        neg = m[1] == "!"
        pred = Reg(rename.get(m[2], m[2]))
        body = stmt[m.end():]
    parts = body.split(None, 1)
    opcode = parts[0]
    base, *mods = opcode.split(".")
    if base not in OPCODES:
        raise ParseError(f"unknown instruction {opcode!r}", line, stmt)
    args = tuple(_operand(x, rename, line, stmt) for x in _split_operands(parts[1])) if len(parts) > 1 else ()
    return Instr(base, tuple(mods), args, pred, neg, line, stmt)


def parse(ptx: str) -> Module:
    """Parse a whole PTX module. Raises ParseError naming the line of anything it does not know."""
    text = _COMMENT.sub(lambda m: "\n" * m[0].count("\n"), ptx)
    text = _LINE_DIRECTIVE.sub(r"\1;", text)     # these end at the newline, not at a ';'
    version, target, addr_size = (0, 0), "", 64
    globals_: dict[str, Variable] = {}
    kernels: dict[str, Kernel] = {}
    stmts = list(_statements(text))
    i = 0
    while i < len(stmts):
        line, s = stmts[i]
        if s.startswith(".version"):
            a, b = s.split()[1].split(".")
            version = (int(a), int(b))
        elif s.startswith(".target"):
            target = s.split(None, 1)[1]
        elif s.startswith(".address_size"):
            addr_size = int(s.split()[1])
        elif s.startswith((".file", ".loc", ".section", ".pragma")):
            pass
        elif re.match(r"^(\.(visible|weak|extern)\s+)*\.(entry|func)\b", s):
            i = _kernel(stmts, i, kernels, globals_)
            continue
        elif _VAR_DECL.match(s):
            v = _variable(s, line, s)
            globals_[v.name] = v
        else:
            raise ParseError("unknown module-level statement", line, s)
        i += 1
    return Module(version, target, addr_size, globals_, kernels)


def _block_labels(stmts, i) -> list[str]:
    """The labels declared in the { } block whose body starts at stmts[i] (not in blocks nested in it)."""
    out, depth = [], 0
    for _, s in stmts[i:]:
        if s == "{":
            depth += 1
        elif s == "}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and s.endswith(":") and re.fullmatch(r"[$\w]+:", s):
            out.append(s[:-1])
    return out


def _kernel(stmts, i, kernels, globals_) -> int:
    line, head = stmts[i]
    m = re.match(r"^(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([$\w]+)\s*\((.*)\)(.*)$", head, re.S)
    if m is None:
        m2 = re.match(r"^(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([$\w]+)\s*(.*)$", head, re.S)
        if not m2:
            raise ParseError("cannot parse kernel header", line, head)
        kind, name, ptext, tail = m2[1], m2[2], "", m2[3]
    else:
        kind, name, ptext, tail = m[1], m[2], m[3], m[4]
    params = []
    for p in _split_operands(ptext):
        p = " ".join(p.split())
        mp_ = _PARAM.match(p)
        if not mp_:
            raise ParseError(f"cannot parse kernel param {p!r}", line, head)
        bits = TYPES[mp_[2]]
        count = int(mp_[4]) if mp_[4] else 1
        size = max(bits // 8, 1) * count
        params.append(Param(mp_[3], mp_[2], size, int(mp_[1]) if mp_[1] else max(bits // 8, 1)))
    directives = {}
    for d in re.finditer(r"\.(maxntid|reqntid|minnctapersm|maxnreg|maxclusterrank|reqnctapercluster)\s+([\d,\s]+)", tail):
        directives[d[1]] = tuple(int(x) for x in d[2].replace(",", " ").split())
    i += 1
    # directives may also follow on their own statements before '{'
    while i < len(stmts) and stmts[i][1] != "{":
        line, s = stmts[i]
        for d in re.finditer(r"\.(maxntid|reqntid|minnctapersm|maxnreg|maxclusterrank|reqnctapercluster)\s+([\d,\s]+)", s):
            directives[d[1]] = tuple(int(x) for x in d[2].replace(",", " ").split())
        if s == ";" or s.startswith((".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".noreturn", ".pragma")):
            i += 1
            continue
        if s.startswith("."):
            i += 1
            continue
        raise ParseError("expected '{' after kernel header", line, s)
    if i >= len(stmts):
        if kind == "func":      # a declaration only
            return i
        raise ParseError(f"kernel {name} has no body", line, head)
    i += 1
    regs: dict[str, str] = {}
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    local_vars: dict[str, Variable] = {}
    scopes: list[dict[str, str]] = [{}]
    scope_id = 0
    while True:
        if i >= len(stmts):
            raise ParseError(f"kernel {name}: missing closing brace", line)
        line, s = stmts[i]
        i += 1
        if s == "}":
            if len(scopes) == 1:
                break
            scopes.pop()
            continue
        if s == "{":
            scope_id += 1
            inner = dict(scopes[-1])
            for label in _block_labels(stmts, i):       # a block's labels are its own (an inlined asm twice)
                inner[label] = f"$_s{scope_id}_{label}"
            scopes.append(inner)
            continue
        rename = scopes[-1]
        if s.endswith(":") and re.fullmatch(r"[$\w]+:", s):
            label = rename.get(s[:-1], s[:-1])
            if label in labels:
                raise ParseError(f"label {s[:-1]} defined twice in one block", line, s)
            labels[label] = len(instrs)
            continue
        md = _REG_DECL.match(s)
        if md:
            typ = md[1]
            if typ not in TYPES:
                raise ParseError(f"unknown register type .{typ}", line, s)
            for r in _expand_regs(md[2]):
                if len(scopes) > 1:       # inline-asm scope: give locals a unique name
                    uniq = f"%_s{scope_id}_{r.lstrip('%')}"
                    rename[r] = uniq
                    r = uniq
                regs[r] = typ
            continue
        if _VAR_DECL.match(s):
            v = _variable(s, line, s)
            local_vars[v.name] = v
            continue
        if s.startswith((".loc", ".pragma", ".file")):
            continue
        if s.startswith("."):
            raise ParseError("unknown directive in kernel body", line, s)
        ins = _instruction(s, rename, line)
        ins.index = len(instrs)
        instrs.append(ins)
    if kind == "func":
        return i            # device functions are parsed for syntax, but only entries are kernels
    k = Kernel(name, params, regs, instrs, labels, local_vars, directives)
    _check_registers(k)
    build_cfg(k)
    kernels[name] = k
    return i


def _check_registers(k: Kernel) -> None:
    def walk(x, ins):
        if isinstance(x, Reg) and x.name not in k.regs:
            raise ParseError(f"undeclared register {x.name}", ins.line, ins.text)
        for y in (x.items if isinstance(x, Vec) else (x.a, x.b) if isinstance(x, PredPair)
                  else (x.base,) if isinstance(x, Addr) and isinstance(x.base, Reg)
                  else (x.reg,) if isinstance(x, NotPred) else ()):
            walk(y, ins)
    for ins in k.instrs:
        for a in ins.args:
            walk(a, ins)
        if ins.pred is not None:
            walk(ins.pred, ins)


def cp_async_operands(ins: Instr) -> list:
    """cp.async [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}: the operands after cp-size but the
    cache policy, which is there with .L2::cache_hint alone (one operand: a src-size, or a predicate ignore-src)."""
    extra = list(ins.args[3:])
    return extra[:-1] if "L2::cache_hint" in ins.mods and extra else extra


# ---- rendering (the inverse of parsing one instruction) ------------------------------------------------

def render_operand(x) -> str:
    if isinstance(x, Reg | Sym):
        return x.name
    if isinstance(x, Imm):
        if x.raw is not None:
            return ("0f%08X" if x.raw[1] == 32 else "0d%016X") % x.raw[0]
        return "0d%016X" % struct.unpack("<Q", struct.pack("<d", x.value))[0] if x.is_float else str(x.value)
    if isinstance(x, Special):
        return x.name + (f".{x.dim}" if x.dim else "")
    if isinstance(x, Addr):
        base = x.base.name if x.base is not None else ""
        off = (f"+{x.offset}" if x.offset else "") if base else str(x.offset)      # PTX writes [%rd+-4]
        return f"[{base}{off}]"
    if isinstance(x, Vec):
        return "{" + ", ".join(render_operand(i) for i in x.items) + "}"
    if isinstance(x, Sink):
        return "_"
    if isinstance(x, PredPair):
        return f"{x.a.name}|{x.b.name}"
    if isinstance(x, NotPred):
        return "!" + x.reg.name
    raise TypeError(x)


def render(ins: Instr) -> str:
    """PTX text for one instruction; parsing it gives back the same op, modifiers, operands and guard."""
    guard = f"@{'!' if ins.neg else ''}{ins.pred.name} " if ins.pred is not None else ""
    ops = ", ".join(render_operand(a) for a in ins.args)
    return f"{guard}{'.'.join((ins.op, *ins.mods))}" + (f" {ops}" if ops else "")


def parse_instruction(text: str, line: int = 0) -> Instr:
    return _instruction(text.strip().rstrip(";"), {}, line)


# ---- control flow -----------------------------------------------------------------------------------

def _ends_block(ins: Instr) -> bool:
    return ins.op in ("bra", "ret", "exit")


def build_cfg(k: Kernel) -> None:
    n = len(k.instrs)
    leaders = {0} | {t for t in k.labels.values() if t < n}
    for ins in k.instrs:
        if _ends_block(ins) and ins.index + 1 < n:
            leaders.add(ins.index + 1)
    starts = sorted(x for x in leaders if x < n) if n else []
    k.blocks = [Block(b, s, starts[b + 1] if b + 1 < len(starts) else n) for b, s in enumerate(starts)]
    k.block_of = [0] * n
    for b in k.blocks:
        for j in range(b.start, b.end):
            k.block_of[j] = b.id
    for b in k.blocks:
        last = k.instrs[b.end - 1]
        succ = []
        if last.op == "bra":
            label = last.args[0].name if isinstance(last.args[0], Sym) else None
            if label is None:
                raise ParseError("indirect branches are not supported", last.line, last.text)
            t = k.target(label)
            if t >= n:
                raise ParseError("branch past the end of the kernel", last.line, last.text)
            succ.append(k.block_of[t])
            if last.pred is not None and b.end < n:
                succ.append(k.block_of[b.end])
        elif last.op in ("ret", "exit"):
            if last.pred is not None and b.end < n:
                succ.append(k.block_of[b.end])
        elif b.end < n:
            succ.append(k.block_of[b.end])
        b.succs = list(dict.fromkeys(succ))
    for b in k.blocks:
        for s in b.succs:
            k.blocks[s].preds.append(b.id)
    k.ipdom = _post_dominators(k)


def _post_dominators(k: Kernel, exits: frozenset = frozenset()) -> list[int]:
    """Immediate post-dominator of each block (-1 is the virtual exit), Cooper-Harvey-Kennedy on the
    reversed graph. Blocks that cannot reach an exit (infinite loops) post-dominate nothing: -1.
    Blocks in `exits` get an extra edge to the exit (a predicated ret/exit ends some threads there)."""
    nb = len(k.blocks)
    EXIT = nb
    rsucc = {b.id: ([s for s in b.succs] + ([EXIT] if b.id in exits else []) or [EXIT])
             for b in k.blocks}   # edges toward exit
    # reverse postorder of the reversed graph, starting at EXIT
    rpreds: dict[int, list[int]] = {EXIT: []}
    for b, ss in rsucc.items():
        for s in ss:
            rpreds.setdefault(s, []).append(b)
    order, seen = [], set()

    def dfs(u):
        stack = [(u, iter(rpreds.get(u, [])))]
        seen.add(u)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                order.append(node)
                stack.pop()
            elif nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(rpreds.get(nxt, []))))
    dfs(EXIT)
    rpo = order[::-1]
    pos = {b: i for i, b in enumerate(rpo)}
    idom = {EXIT: EXIT}

    def intersect(a, b):
        while a != b:
            while pos[a] > pos[b]:
                a = idom[a]
            while pos[b] > pos[a]:
                b = idom[b]
        return a
    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            cands = [s for s in rsucc[b] if s in idom]
            if not cands:
                continue
            new = cands[0]
            for s in cands[1:]:
                new = intersect(new, s)
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return [(-1 if idom.get(b, EXIT) == EXIT else idom[b]) for b in range(nb)]
