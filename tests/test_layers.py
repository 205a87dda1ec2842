"""The layers form a DAG: isolate <- registry <- checker (ptx <- emulator <- prover) <- runtime <- conformance
<- engine (and kreg.torch, beside it) <- the pipeline, the commands, the CLI and the user suite. A module never imports a higher layer,
and no set of modules imports each other in a cycle (any import statement, at the top or inside a function,
counts)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"registry": "kreg.registry", "checker": "kreg.checker", "runtime": "kreg.runtime",
            "conformance": "kreg.conformance", "engine": "kreg.engine", "kreg": "kreg"}
RANK = {"kreg": 0, "kreg.isolate": 0, "kreg.registry": 1, "kreg.checker": 2, "kreg.checker.ptx": 2,
        "kreg.checker.emulator": 2.1, "kreg.checker.prover": 2.2, "kreg.runtime": 3,
        "kreg.conformance": 4, "kreg.engine": 5, "kreg.torch": 5, "kreg.pipeline": 6, "kreg.fanout": 7, "kreg.submit": 7, "kreg.commands": 7, "kreg.cli": 8,
        "kreg.suite": 8}


def layer(module: str) -> str:
    parts = module.split(".")
    for n in (3, 2, 1):
        if ".".join(parts[:n]) in RANK:
            return ".".join(parts[:n])
    raise KeyError(module)


def modules():
    for folder, pkg in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            name = ".".join([pkg, *rel.parts]).removesuffix(".__init__")
            yield name, path


def imports(name: str, path: Path):
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("kreg"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_pkg else base[:-1]
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("kreg"):
                yield from (f"{mod}.{a.name}" if f"{mod}.{a.name}" in NAMES or mod == "kreg" else mod
                            for a in node.names)


MODULES = list(modules())
NAMES = {m for m, _ in MODULES}


@pytest.mark.parametrize("name,path", MODULES, ids=[m for m, _ in MODULES])
def test_no_module_imports_a_higher_layer(name, path):
    mine = RANK[layer(name)]
    bad = [m for m in imports(name, path) if RANK[layer(m)] > mine]
    assert not bad, f"{name} (layer {layer(name)}) imports higher layers: {bad}"


def test_the_walk_sees_every_layer():
    assert {layer(m) for m, _ in MODULES} >= {"kreg.registry", "kreg.checker", "kreg.runtime", "kreg.conformance",
                                               "kreg.pipeline", "kreg.isolate"}


def test_no_import_cycles():
    """Tarjan's strongly connected components of the module graph: every one a single module."""
    graph = {name: sorted({m for m in imports(name, path) if m in NAMES and m != name}) for name, path in MODULES}
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                cycles.append(sorted(scc))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"
