"""Every third-party package objrel's code imports is declared in pyproject.toml, by the core or by the extra
that installs it, and the core imports no extra's package when it is loaded.

The test reads every module under ``objrel/`` with ``ast`` (imports at module level and inside functions alike),
keeps the top-level names that are neither the standard library nor objrel itself, maps each to the
distributions that provide it (``importlib.metadata.packages_distributions()``) and asks that one of them be in
``[project] dependencies``, or, for a package of an extra (``objrel.extras.EXTRA_OF_IMPORT``), in that extra.
A package of an extra is imported inside the functions that need it, never at a module's top level, except in
the app's own packages (``objrel.app``, ``objrel.web``), which only the app loads.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

from objrel.extras import EXTRA_OF_IMPORT

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "objrel"
# Packages only the app (app.py, pages/, serve.py) loads: they may import the app extra's packages at the top.
APP_ONLY = ("objrel/app/", "objrel/web/")
APP_EXTRA = "app"
# Import name -> the distribution the Makefile installs alone (``pip install --no-deps``) because its own pins
# cannot be met beside the declared dependencies; declaring it would pull torch and numpy back to old releases.
#   facenet_pytorch - MTCNN's bundled weights (objrel.models.mtcnn); facenet-pytorch 2.6 pins torch<2.3, numpy<2.
INSTALLED_WITHOUT_PINS = {"facenet_pytorch": "facenet-pytorch"}


def _normalise(requirement: str) -> str:
    """The distribution name of a requirement string, PEP 503-normalised ("ray[data]==2.60.0" -> "ray")."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(node: ast.AST) -> set[str]:
    """Top-level names of one import statement (``import a.b`` and ``from a.b import c`` give ``a``)."""
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return {node.module.split(".")[0]}
    return set()


def imported_names(path: Path) -> set[str]:
    """Top-level names of the absolute imports in one source file, wherever they stand."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return set().union(*(_names(node) for node in ast.walk(tree)))


def module_level_names(path: Path) -> set[str]:
    """Top-level names imported when the module is loaded: its statements outside functions (class bodies,
    ``if`` and ``try`` blocks included)."""
    found: set[str] = set()
    todo = list(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        found |= _names(node)
        todo += list(ast.iter_child_nodes(node))
    return found


def _third_party(names: set[str]) -> set[str]:
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("objrel", "__future__")}


def third_party_imports() -> dict[str, list[str]]:
    """Third-party top-level import name -> the objrel modules that import it."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in _third_party(imported_names(path)):
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def undeclared(imports: dict[str, list[str]], dependencies: list[str], extras: dict[str, list[str]],
               providers: dict[str, list[str]], extra_of: dict[str, str]) -> list[str]:
    """One line per import name no declared distribution provides: the name, the modules that import it and
    where it should have been declared (the core's dependencies, or the extra ``extra_of`` names for it)."""
    declared = {_normalise(r) for r in dependencies}
    problems = []
    for name, modules in sorted(imports.items()):
        dists = {_normalise(d) for d in providers.get(name, [])}
        if not dists:
            problems.append(f"{name} (imported by {', '.join(modules)}): no installed distribution provides it")
            continue
        if name in INSTALLED_WITHOUT_PINS:
            continue
        extra = extra_of.get(name)
        allowed = {_normalise(r) for r in extras.get(extra, [])} if extra else declared
        if not dists & allowed:
            where = f"[project.optional-dependencies] {extra}" if extra else "[project] dependencies"
            problems.append(f"{name} (imported by {', '.join(modules)}) comes from {sorted(dists)}, "
                            f"which {where} does not declare")
    return problems


def extras_loaded_with_the_core(extra_of: dict[str, str]) -> list[str]:
    """One line per module outside the app's packages that imports an extra's package at its top level."""
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel.startswith(APP_ONLY):
            continue
        for name in sorted(_third_party(module_level_names(path)) & set(extra_of)):
            problems.append(f"{rel} imports {name} (extra {extra_of[name]}) when it is loaded; import it "
                            f"inside the function that needs it")
    return problems


def test_every_imported_package_is_declared_by_the_core_or_its_extra():
    project = _project()
    imports = third_party_imports()
    assert {"numpy", "torch", "pandas", "streamlit", "ray"} <= set(imports)      # the walk sees objrel's imports
    problems = undeclared(imports, project["dependencies"], project.get("optional-dependencies", {}),
                          md.packages_distributions(), EXTRA_OF_IMPORT)
    assert not problems, "undeclared dependencies:\n" + "\n".join(problems)


def test_the_core_loads_no_package_of_an_extra():
    problems = extras_loaded_with_the_core(EXTRA_OF_IMPORT)
    assert not problems, "\n".join(problems)


def test_the_core_declares_no_package_of_an_extra_and_dev_installs_every_extra():
    project = _project()
    extras = project["optional-dependencies"]
    providers = md.packages_distributions()
    core = {_normalise(r) for r in project["dependencies"]}
    for name, extra in EXTRA_OF_IMPORT.items():
        dists = {_normalise(d) for d in providers.get(name, [])}
        assert dists & {_normalise(r) for r in extras[extra]}, f"extra {extra!r} does not declare {name}"
        assert not dists & core, f"{name} is in [project] dependencies; it belongs to the extra {extra!r}"
    dev_self = [r for r in extras["dev"] if _normalise(r) == "objrel"]
    assert dev_self, "dev does not install objrel's extras"
    in_dev = set(re.search(r"\[(.*)\]", dev_self[0]).group(1).replace(" ", "").split(","))
    assert in_dev == set(extras) - {"dev"}, f"dev installs the extras {sorted(in_dev)}, not {sorted(extras)}"


def test_imports_inside_functions_count_and_the_unpinned_installs_are_in_the_makefile():
    # an import inside a function body counts as much as one at the top of the module
    sweep = imported_names(PACKAGE / "engine" / "sweep.py")
    assert "matplotlib" in sweep and "matplotlib" not in module_level_names(PACKAGE / "engine" / "sweep.py")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for dist in INSTALLED_WITHOUT_PINS.values():
        assert re.search(rf"pip install[^\n]*--no-deps[^\n]*{dist}", makefile), f"the Makefile does not install {dist}"


def test_an_undeclared_import_is_reported_with_its_module():
    providers = {"numpy": ["numpy"], "yaml": ["PyYAML"], "ray": ["ray"]}
    imports = {"numpy": ["objrel/a.py"], "yaml": ["objrel/b.py"], "ray": ["objrel/c.py"], "nowhere": ["objrel/d.py"]}
    problems = undeclared(imports, ["numpy>=1.26"], {"ray": ["ray[data]==2.60.0"]}, providers, {"ray": "ray"})
    assert problems == [
        "nowhere (imported by objrel/d.py): no installed distribution provides it",
        "yaml (imported by objrel/b.py) comes from ['pyyaml'], which [project] dependencies does not declare",
    ]
    # an extra's package counts only when its own extra declares it, not the core nor another extra
    assert undeclared({"ray": ["objrel/c.py"]}, ["ray"], {"postgres": ["ray"]}, providers, {"ray": "ray"}) == [
        "ray (imported by objrel/c.py) comes from ['ray'], which [project.optional-dependencies] ray does not "
        "declare"]


def test_a_module_level_import_is_told_from_one_inside_a_function(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import numpy\ntry:\n    import plotly.graph_objects as go\nexcept ImportError:\n    go = None\n"
                      "class A:\n    import ray\n\ndef f():\n    import streamlit\n\nlazy = lambda: __import__('x')\n")
    assert module_level_names(source) == {"numpy", "plotly", "ray"}
    assert imported_names(source) == {"numpy", "plotly", "ray", "streamlit"}
