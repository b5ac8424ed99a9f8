"""Imports run only downward: every import of every objrel module keeps the stage order of ``objrel.stages``.

Each module under ``objrel/`` is parsed (never imported) and every ``import`` / ``from ... import`` in it is
read, at module level and inside functions; relative imports are resolved against the module's package and
``from pkg import name`` counts as importing ``pkg.name`` where that is a module.  An import of an objrel
module whose stage the importer's stage may not import fails the test with file:line.
"""

from __future__ import annotations

import ast
from pathlib import Path

from objrel import stages

ROOT = Path(__file__).resolve().parents[1]


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def objrel_modules(root: Path = ROOT) -> dict[str, Path]:
    """``{dotted name: path relative to root}`` of every module under ``root/objrel``."""
    return {module_name(p.relative_to(root)): p.relative_to(root) for p in sorted((root / "objrel").rglob("*.py"))}


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> list[tuple[int, str]]:
    """(line, dotted module) of every objrel module the source imports, wherever the import stands."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = package[:len(package) - node.level + 1]
                base = ".".join(here + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((node.lineno, sub if sub in known else base))
    return sorted({(line, name) for line, name in out if name == stages.ROOT or name.startswith(stages.ROOT + ".")})


def violations(root: Path = ROOT) -> list[str]:
    mods = objrel_modules(root)
    known = set(mods)
    out = []
    for module, rel in mods.items():
        source = (root / rel).read_text(encoding="utf-8")
        for line, imported in imports_of(source, module, rel.name == "__init__.py", known):
            if not stages.allowed(module, imported):
                mine, theirs = stages.stage_of(module), stages.stage_of(imported)
                out.append(f"{rel}:{line} imports {imported} (stage {theirs.name if theirs else 'none'}); stage "
                           f"{mine.name if mine else 'none'} may import {', '.join(mine.may_import) if mine else '-'}")
    return out


def test_every_module_has_a_stage():
    mods = objrel_modules()
    assert len(mods) > 50, f"expected the whole objrel package under {ROOT}, found {len(mods)} modules"
    lost = sorted(m for m in mods if stages.stage_of(m) is None)
    assert not lost, f"modules no stage of objrel.stages holds (add them to its table): {lost}"


def test_imports_run_only_downward():
    found = violations()
    assert not found, "imports against the stage order (objrel/stages.py):\n" + "\n".join(found)


def test_the_table_is_an_order():
    names = [s.name for s in stages.STAGES]
    for i, s in enumerate(stages.STAGES):
        assert set(s.may_import) <= set(names[:i]), f"{s.name} names a stage at or above it: {s.may_import}"
    assert stages.stage_of("objrel.review.rebuild").name == stages.REVIEW
    assert stages.stage_of("objrel.explain").name == stages.REVIEW
    assert stages.stage_of("objrel.access").name == stages.BOTTOM
    assert stages.stage_of("objrel.nowhere") is None      # the root package holds only itself
    assert not stages.allowed("objrel.review.items", "objrel.engine.retest")
    assert not stages.allowed("objrel.store.schema", "objrel.models.zoo")
    assert stages.allowed("objrel.engine.detect", "objrel.store.detections")


def test_the_check_sees_imports_inside_functions_and_relative_ones(tmp_path):
    """A planted upward import at module level, one inside a function and a relative one are each named."""
    pkg = tmp_path / "objrel"
    for sub in ("store", "review", "engine", "data"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "engine" / "run.py").write_text("X = 1\n")
    (pkg / "data" / "x.py").write_text("from objrel import access\n\n\ndef f():\n    from objrel.store import y\n")
    (pkg / "review" / "items.py").write_text("import os\n\n\ndef g():\n    from ..engine import run\n")
    (pkg / "store" / "y.py").write_text("from objrel.review.items import g\nfrom . import z\n")
    (pkg / "store" / "z.py").write_text("")
    found = violations(tmp_path)
    assert [f.split(" imports ")[0] for f in found] == [
        "objrel/data/x.py:5", "objrel/review/items.py:5", "objrel/store/y.py:1"], found
    assert "imports objrel.engine.run (stage engine); stage review may import" in found[1]


def test_the_readme_states_the_same_order():
    """The README's stage block lists every stage of ``objrel.stages.STAGES``, in order, with what it may import."""
    import re
    from pathlib import Path

    from objrel.stages import STAGES

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text.split("\nstage      modules", 1)[1].split("```", 1)[0]
    names = [m.group(1) for m in re.finditer(r"^(\w+)\s{2,}", block, re.M)]
    assert names == [s.name for s in STAGES]
    above_all = [s.name for s in STAGES]
    for s in STAGES:
        line = next(l for l in block.splitlines() if l.startswith(s.name + " "))  # noqa: E741
        allowed = line.split("  ")[-1].strip()
        if allowed == "every stage before it":
            assert set(s.may_import) == set(above_all[: above_all.index(s.name)])
        elif allowed == "(the standard library only)":
            assert s.may_import == ()
        else:
            assert [a.strip() for a in allowed.split(",")] == list(s.may_import), s.name
