"""No import cycles among objrel's modules, counting imports inside functions too.

The graph is read from the source with ``ast`` (nothing is imported): an edge A -> B for every
``import``/``from ... import`` in A that names objrel module B, wherever it stands in A.  Importing
``objrel.x.y`` also runs ``objrel.x``'s ``__init__``, so an edge to a module of another package adds
an edge to each package above it (a module's own packages are left out: they are already importing).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "objrel"


def module_files(root: Path = PACKAGE_ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """``{dotted module name: file}`` for every ``.py`` file of the package; a package is its ``__init__``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _containing_module(name: str, modules) -> str | None:
    """The longest prefix of the dotted ``name`` that is a module
    (``objrel.models.Classifier`` -> ``objrel.models``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(node, module: str, is_package: bool, modules) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative import: climb from this module's package
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[:len(here) - node.level + 1]
        base = ".".join(here + ([base] if base else []))
    # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


def import_graph(modules: dict[str, Path] | None = None) -> dict[str, dict[str, int]]:
    """``{module: {imported module: line of the first such import}}`` over the package's own modules."""
    modules = modules if modules is not None else module_files()
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        own_package = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in _imported_names(node, module, is_package, modules):
                target = _containing_module(name, modules)
                if target is None or target == module:
                    continue
                graph[module].setdefault(target, node.lineno)
                parent = target.rpartition(".")[0]
                while parent and not (own_package == parent or own_package.startswith(parent + ".")):
                    graph[module].setdefault(parent, node.lineno)
                    parent = parent.rpartition(".")[0]
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    members = set(cycle)
    edges = [f"  {a} (line {line}) -> {b}" for a in cycle for b, line in sorted(graph[a].items()) if b in members]
    return "cycle among " + ", ".join(cycle) + ":\n" + "\n".join(edges)


def test_no_import_cycles_among_objrel_modules():
    graph = import_graph()
    cycles = import_cycles(graph)
    assert not cycles, "\n".join(describe(c, graph) for c in cycles)


def test_the_cycle_finder_sees_function_level_and_package_imports(tmp_path):
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from objrel.sub.b import B\n")
    (pkg / "sub" / "b.py").write_text("from objrel.sub.e import E\nB = E\n")
    (pkg / "sub" / "e.py").write_text("E = 1\n")
    (pkg / "a.py").write_text("def f():\n    from objrel.c import C\n")
    (pkg / "c.py").write_text("from . import a\nC = 1\n")
    (pkg / "d.py").write_text("from objrel.sub.b import B\n")
    graph = import_graph(module_files(tmp_path))
    assert import_cycles(graph) == [["objrel.a", "objrel.c"]]
    assert {"objrel.sub.b", "objrel.sub"} <= set(graph["objrel.d"])     # the package above runs too
    assert set(graph["objrel.sub.b"]) == {"objrel.sub.e"}                 # but not for its own modules
