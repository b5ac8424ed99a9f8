"""The tree is clean of the linter's rules (pyproject.toml ``[tool.ruff]``), which `make test` also runs first."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[1]


# The only part of the library let off the docstring rules: the schema revisions, run by Alembic alone.
DOCSTRINGS_EXEMPT = {"objrel/store/alembic/versions/**"}


def test_the_rules_ask_for_docstrings_on_the_library():
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert {"E", "F", "W", "B", "D102", "D103"} <= set(lint["select"])
    let_off = {path for path, rules in lint["per-file-ignores"].items()
               if path.startswith("objrel") and {"D102", "D103"} & set(rules)}
    assert let_off == DOCSTRINGS_EXEMPT, f"expected only {DOCSTRINGS_EXEMPT} let off docstrings, got {let_off}"


def test_ruff_finds_nothing():
    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "."], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"expected no ruff findings, got:\n{res.stdout}{res.stderr}"
