"""Generated `kreg submit` candidates: correct copies and mutants of the small `hadd` kernel of
tests/data/hostile/_common and of the registry's add_bf16, each with what the intake must decide (submitted by
tests/cli/test_submit.py and timed by bench/submit_throughput.py)."""
from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HADD_OK = (ROOT / "tests/data/hostile/_common/src/hadd_ok.cu").read_text()
ADD_BF16 = (ROOT / "kernels/safe/add/add_bf16.cu").read_text()
HADD_BODY = "if (i < n) out[i] = a[i] + b[i];"

# kind -> (op, what the source does, accepted?)
KINDS = {
    "ok": ("hadd", "correct", True),
    "minus": ("hadd", "a - b instead of a + b", False),
    "oob": ("hadd", "i <= n: writes one element past the end", False),
    "add_ok": ("add", "a copy of the registry's add_bf16", True),
    "skip_last": ("hadd", "i < n - 1: never writes the last element", False),
    "writes_input": ("hadd", "zeroes its input a after reading it", False),
    "short_grid": ("hadd", "half the blocks it needs", False),
    "add_mut": ("add", "add_bf16 subtracting in its vector path", False),
}
ORDER = ["ok", "minus", "oob", "add_ok", "skip_last", "ok", "writes_input", "short_grid", "add_mut"]


def generate(folder: Path, count: int) -> dict[str, bool]:
    """count candidates (.cu + .yaml) in folder; returns name -> whether it must be accepted."""
    folder.mkdir(parents=True, exist_ok=True)
    expected = {}
    for i in range(count):
        kind = ORDER[i % len(ORDER)]
        op, _, ok = KINDS[kind]
        name = f"gen{i:03d}_{kind}"
        block = (64, 128, 256, 512)[i % 4]
        grid = f"cdiv(N, {2 * block})" if kind == "short_grid" else f"cdiv(N, {block})"
        if op == "hadd":
            src = HADD_OK.replace(HADD_BODY, {
                "minus": "if (i < n) out[i] = a[i] - b[i];",
                "oob": "if (i <= n) out[i] = a[i] + b[i];",
                "skip_last": "if (i < n - 1) out[i] = a[i] + b[i];",
                "writes_input": "if (i < n) { out[i] = a[i] + b[i]; const_cast<float*>(a)[i] = 0.f; }",
            }.get(kind, HADD_BODY))
            meta = (f"op: hadd\nentry: hadd\ntypes: {{T: f32}}\nargs: [a, b, out, N]\n"
                    f"launch:\n  grid: [\"{grid}\"]\n  block: [{block}]\n")
        else:
            src = ADD_BF16.replace("x.v[k] += y.v[k]", "x.v[k] -= y.v[k]") if kind == "add_mut" else ADD_BF16
            meta = ("op: add\nentry: add_bf16\ntypes: {T: bf16}\nargs: [a, b, out, N]\n"
                    "launch:\n  grid: [\"cdiv(N, 2048)\"]\n  block: [256]\n")
        src = f"// generated candidate {i} ({kind})\n" + src
        prompt = hashlib.sha256(f"prompt {i}".encode()).hexdigest()[:16]
        (folder / f"{name}.cu").write_text(src)
        (folder / f"{name}.yaml").write_text(
            f"name: {name}\nsafety: {'safe' if i % 2 == 0 else 'unsafe'}\nsource: {name}.cu\n{meta}"
            f"provenance: {{generator: submit_throughput, prompt_hash: '{prompt}', parent: {op}}}\n")
        expected[name] = ok
    return expected
