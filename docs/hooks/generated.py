"""MkDocs hook: fills the docs' generated sections from the code and the benchmark results at build time.

A page marks a generated section with an HTML comment, ``<!-- objrel:NAME -->``, alone on its line; the hook
replaces it with the Markdown its generator returns.  A marker with no generator fails the build, so a typo
never leaves a silent gap.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HOOKS = Path(__file__).resolve().parent
ROOT = HOOKS.parents[1]
for path in (str(ROOT), str(HOOKS)):
    if path not in sys.path:
        sys.path.insert(0, path)

from action_table import action_table  # noqa: E402
from cli_reference import cli_reference  # noqa: E402
from performance_tables import performance_tables  # noqa: E402
from stage_table import stage_table  # noqa: E402

GENERATORS = {"actions": action_table, "cli": cli_reference, "stages": stage_table, "performance": performance_tables}
MARKER = re.compile(r"^<!-- objrel:([\w-]+) -->$", re.M)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each ``<!-- objrel:NAME -->`` line of a page with its generated Markdown."""
    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: unknown generated section {name!r}; "
                             f"expected one of {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(fill, markdown)
