"""The README's architecture table names every module of objrel, and nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def architecture_rows() -> dict[str, str]:
    """``{folder: row text}`` for each table row of the README's Architecture section whose first cell
    names an ``objrel/`` folder (``objrel/`` itself for the top-level modules)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Architecture", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`(objrel/[\w/]*)`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1).rstrip("/") + "/"] = m.group(2)
    return rows


def modules_by_folder() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in (ROOT / "objrel").rglob("*.py"):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        folder = path.parent.relative_to(ROOT).as_posix() + "/"
        out.setdefault(folder, set()).add(path.name)
    return out


def test_every_module_is_in_the_architecture_table():
    rows = architecture_rows()
    missing = {}
    for folder, names in modules_by_folder().items():
        row = rows.get(folder)
        if row is None:
            missing[folder] = sorted(names)
            continue
        absent = sorted(n for n in names if f"`{n}`" not in row)
        if absent:
            missing[folder] = absent
    assert missing == {}, f"modules the README's architecture table does not name: {missing}"


def test_the_table_names_no_module_that_is_gone():
    have = modules_by_folder()
    stale = {}
    for folder, row in architecture_rows().items():
        named = set(re.findall(r"`(\w+\.py)`", row))
        gone = sorted(named - have.get(folder, set()))
        if gone:
            stale[folder] = gone
    assert stale == {}, f"the README names modules that do not exist: {stale}"
