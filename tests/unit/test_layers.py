"""The architecture, checked: layers point one way (cli -> runner -> session -> report /
load / verify / analysis -> infra -> core / storage), no import cycle anywhere in bench/
(imports inside functions count: a lazy import is still a dependency), and no module over
500 lines."""
import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"

# what each layer may import besides itself
ALLOWED = {
    "paths": set(),
    "core": {"paths"},
    "storage": {"core", "paths"},
    "analysis": {"core", "storage", "paths"},
    "infra": {"core", "storage", "paths"},
    "load": {"infra", "core", "paths"},
    "verify": {"infra", "core", "storage", "paths"},
    "report": {"analysis", "core", "storage", "paths"},
    "setup": {"core", "paths"},
    "session": {"infra", "load", "verify", "setup", "core", "storage", "paths"},
    "runner": {"session", "report", "load", "verify", "analysis", "infra", "setup", "core",
               "storage", "paths"},
    "cli": {"runner", "session", "report", "load", "verify", "analysis", "infra", "setup",
            "core", "storage", "paths"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(BENCH.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in BENCH.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every bench module `path` imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from bench.x import y`: y may be a module of package bench.x
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name.startswith("bench."):
                found.add(name)
    return found


def layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "bench"


GRAPH = {m: imports_of(p, set(modules())) - {m} for m, p in modules().items()}


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if layer(m) in ALLOWED))
def test_layers_point_one_way(module):
    own = layer(module)
    wrong = sorted(m for m in GRAPH[module]
                   if layer(m) != own and layer(m) not in ALLOWED[own] and m != "bench")
    assert not wrong, f"{module} ({own}) imports {wrong}; {own} may import {sorted(ALLOWED[own])}"


def test_every_package_of_bench_has_a_layer():
    assert {layer(m) for m in GRAPH} - {"bench"} <= set(ALLOWED)


def test_there_is_no_import_cycle():
    # a package's __init__ re-exporting its own modules is not a cycle of dependencies
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in GRAPH.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node, path):
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_module_is_over_500_lines(module):
    lines = len(modules()[module].read_text().splitlines())
    assert lines <= 500, f"{module} has {lines} lines"
