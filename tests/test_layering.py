"""Layering: ``objrel/store/`` is the only code that speaks SQL.

Every module under ``objrel/`` and ``pages/`` is parsed (never imported) and its imports are
read, including imports inside functions.  Outside ``objrel/store/`` no module may import
``sqlalchemy`` (or any of its submodules) or ``objrel.store.schema``, nor open a connection on a
store's engine (``<x>.engine.connect()`` / ``<x>.engine.begin()``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Trees whose modules are checked, relative to the repository root.
CHECKED = ("objrel", "pages")
# The one package allowed to speak SQL.
STORE = Path("objrel/store")
# Imports that speak SQL: a module name equal to one of these or inside it.
FORBIDDEN = ("sqlalchemy", "objrel.store.schema")
# Engine methods that open a connection.
CONNECTING = ("connect", "begin")


def _modules() -> list[Path]:
    return sorted(p.relative_to(ROOT) for top in CHECKED for p in (ROOT / top).rglob("*.py"))


def _package(rel: Path) -> list[str]:
    """The dotted package a module lives in, as parts (``objrel/review/x.py`` -> objrel, review)."""
    parts = list(rel.with_suffix("").parts)
    return parts if rel.name == "__init__.py" else parts[:-1]


def _imported(tree: ast.AST, rel: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of everything a module imports; ``from a import b`` gives ``a`` and
    ``a.b`` (b may be a submodule); relative imports are resolved against the module's package."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = _package(rel)
                base = package[:len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            out.extend((node.lineno, f"{module}.{a.name}") for a in node.names)
    return out


def _speaks_sql(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def _engine_calls(tree: ast.AST) -> list[int]:
    """Lines that call ``<anything>.engine.connect()`` or ``<anything>.engine.begin()``."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in CONNECTING and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "engine"]


def _outside_store() -> list[tuple[Path, ast.AST]]:
    mods = [rel for rel in _modules() if STORE not in rel.parents]
    assert len(mods) > 50, f"expected the whole objrel/ and pages/ trees, found {len(mods)} modules under {ROOT}"
    return [(rel, ast.parse((ROOT / rel).read_text(encoding="utf-8"), filename=str(rel))) for rel in mods]


def test_only_the_store_imports_sqlalchemy_or_the_schema():
    offenders = [f"{rel}:{line} imports {name}" for rel, tree in _outside_store()
                 for line, name in _imported(tree, rel) if _speaks_sql(name)]
    assert not offenders, ("only objrel/store/ may speak SQL; move these queries into a store module and call it "
                           "with Python values:\n" + "\n".join(offenders))


def test_only_the_store_opens_connections():
    offenders = [f"{rel}:{line}" for rel, tree in _outside_store() for line in _engine_calls(tree)]
    assert not offenders, ("only objrel/store/ may open a connection on a store's engine; found calls at:\n"
                           + "\n".join(offenders))


def test_the_checks_see_what_they_look_for():
    """The parser finds the forms an import can take, so a clean result means something."""
    src = ("import sqlalchemy\nfrom sqlalchemy.exc import IntegrityError\nfrom objrel.store import schema as S\n"
           "def f(store):\n    from ..store.schema import runs\n    with store.engine.begin() as c:\n        pass\n")
    tree = ast.parse(src)
    names = [n for _, n in _imported(tree, Path("objrel/review/x.py")) if _speaks_sql(n)]
    assert names == ["sqlalchemy", "sqlalchemy.exc", "sqlalchemy.exc.IntegrityError", "objrel.store.schema",
                     "objrel.store.schema", "objrel.store.schema.runs"]
    assert _engine_calls(tree) == [6]
    assert not _speaks_sql("objrel.store.store") and not _speaks_sql("sqlalchemy_utils")
