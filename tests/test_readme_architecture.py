"""The architecture page's module table (docs/architecture.md, linked from the README's Architecture section)
names every module of objrel, and nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The page that holds the module table, and the README section that must send readers to it.
ARCHITECTURE_PAGE = ROOT / "docs" / "architecture.md"
MODULES_HEADING = "\n## Modules"


def architecture_rows() -> dict[str, str]:
    """``{folder: row text}`` for each table row of the architecture page's Modules section whose first cell
    names an ``objrel/`` folder (``objrel/`` itself for the top-level modules)."""
    text = ARCHITECTURE_PAGE.read_text(encoding="utf-8")
    assert MODULES_HEADING in text, f"{ARCHITECTURE_PAGE.name} has no '{MODULES_HEADING.strip()}' section"
    section = text.split(MODULES_HEADING, 1)[1].split("\n## ", 1)[0]
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
    assert missing == {}, f"modules the architecture page's table does not name: {missing}"


def test_the_table_names_no_module_that_is_gone():
    have = modules_by_folder()
    stale = {}
    for folder, row in architecture_rows().items():
        named = set(re.findall(r"`(\w+\.py)`", row))
        gone = sorted(named - have.get(folder, set()))
        if gone:
            stale[folder] = gone
    assert stale == {}, f"the architecture page names modules that do not exist: {stale}"


def test_the_readme_architecture_section_links_the_module_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\n## Architecture" in readme, "the README has no Architecture section"
    section = readme.split("\n## Architecture", 1)[1].split("\n## ", 1)[0]
    assert "(docs/architecture.md#modules)" in section, "the README's Architecture section does not link the table"


def test_the_table_is_read_from_enough_rows_to_mean_something():
    # a heading renamed or a table reformatted would leave no rows, and the checks above would pass on nothing
    assert len(architecture_rows()) >= len(modules_by_folder())
