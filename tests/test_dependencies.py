"""Every third-party package objrel's code imports is declared in pyproject.toml.

The test reads every module under ``objrel/`` with ``ast`` (imports at module level and inside functions alike),
keeps the top-level names that are neither the standard library nor objrel itself, maps each to the
distributions that provide it (``importlib.metadata.packages_distributions()``) and asks that one of them be in
``[project] dependencies``.  The packages of an optional extra (``OPTIONAL_EXTRAS``) are imported lazily by the
modules that need them and are declared in that extra instead.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "objrel"

# Import name -> the [project.optional-dependencies] extra that declares it.  These are imported lazily (inside
# the functions that need them), so a plain install runs without them:
#   ray     - the distributed engine, `objrel run --engine ray` (extra "ray");
#   psycopg - PostgreSQL stores, OBJREL_STORE=postgresql+psycopg://... (extra "postgres").
OPTIONAL_EXTRAS = {"ray": "ray", "psycopg": "postgres"}
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


def imported_names(path: Path) -> set[str]:
    """Top-level names of the absolute imports in one source file (``import a.b`` and ``from a.b import c``
    give ``a``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def third_party_imports() -> dict[str, list[str]]:
    """Third-party top-level import name -> the objrel modules that import it."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in imported_names(path):
            if name in sys.stdlib_module_names or name in ("objrel", "__future__"):
                continue
            found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def undeclared(imports: dict[str, list[str]], dependencies: list[str], extras: dict[str, list[str]],
               providers: dict[str, list[str]]) -> list[str]:
    """One line per import name no declared distribution provides: the name, the modules that import it and
    where it should have been declared."""
    declared = {_normalise(r) for r in dependencies}
    problems = []
    for name, modules in sorted(imports.items()):
        dists = {_normalise(d) for d in providers.get(name, [])}
        if not dists:
            problems.append(f"{name} (imported by {', '.join(modules)}): no installed distribution provides it")
            continue
        if name in INSTALLED_WITHOUT_PINS:
            continue
        extra = OPTIONAL_EXTRAS.get(name)
        allowed = declared | ({_normalise(r) for r in extras.get(extra, [])} if extra else set())
        if not dists & allowed:
            where = f"[project.optional-dependencies] {extra}" if extra else "[project] dependencies"
            problems.append(f"{name} (imported by {', '.join(modules)}) comes from {sorted(dists)}, "
                            f"which {where} does not declare")
    return problems


def test_every_imported_package_is_declared():
    project = _project()
    imports = third_party_imports()
    assert {"numpy", "torch", "pandas"} <= set(imports)        # the walk sees objrel's imports at all
    problems = undeclared(imports, project["dependencies"], project.get("optional-dependencies", {}),
                          md.packages_distributions())
    assert not problems, "undeclared dependencies:\n" + "\n".join(problems)


def test_imports_inside_functions_count_and_optional_extras_are_named():
    # an import inside a function body counts as much as one at the top of the module
    sweep = imported_names(PACKAGE / "analysis" / "sweep.py") if (PACKAGE / "analysis" / "sweep.py").exists() \
        else imported_names(PACKAGE / "engine" / "sweep.py")
    assert "matplotlib" in sweep
    extras = _project().get("optional-dependencies", {})
    for name, extra in OPTIONAL_EXTRAS.items():
        assert any(_normalise(r) == name for r in extras[extra]), f"extra {extra!r} does not declare {name}"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for dist in INSTALLED_WITHOUT_PINS.values():
        assert re.search(rf"pip install[^\n]*--no-deps[^\n]*{dist}", makefile), f"the Makefile does not install {dist}"


def test_an_undeclared_import_is_reported_with_its_module():
    providers = {"numpy": ["numpy"], "yaml": ["PyYAML"], "ray": ["ray"]}
    imports = {"numpy": ["objrel/a.py"], "yaml": ["objrel/b.py"], "ray": ["objrel/c.py"], "nowhere": ["objrel/d.py"]}
    problems = undeclared(imports, ["numpy>=1.26"], {"ray": ["ray[data]==2.60.0"]}, providers)
    assert problems == [
        "nowhere (imported by objrel/d.py): no installed distribution provides it",
        "yaml (imported by objrel/b.py) comes from ['pyyaml'], which [project] dependencies does not declare",
    ]
    # the optional package counts only when its own extra declares it
    assert undeclared({"ray": ["objrel/c.py"]}, [], {"postgres": ["ray"]}, providers) == [
        "ray (imported by objrel/c.py) comes from ['ray'], which [project.optional-dependencies] ray does not "
        "declare"]
