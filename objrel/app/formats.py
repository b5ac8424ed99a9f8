"""Number formats and column names the pages show (plain functions: no Streamlit).

Missing values (None, NaN, ``pd.NA``, ``pd.NaT``) show as ``MISSING``, in the tables' cells too
(``objrel.app.tables.shown_missing``).  ``COLUMN_LABELS`` names the analysis tables' columns for
people (``mr1_ratio`` -> ``MR-1 share``): the table headers show these, the CSV downloads
keep the column names.
"""

from __future__ import annotations

import math

MISSING = "-"
# Below this a p-value is written in scientific notation (2.3e-05), above with three decimals.
SCIENTIFIC_BELOW = 0.001


def is_missing(x) -> bool:
    """None, NaN, and pandas' own missing markers (``pd.NA``, ``pd.NaT``), told apart by type name so that
    this module needs no pandas."""
    if x is None or type(x).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(x, float) and math.isnan(x)


def percent(x: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage: 0.1234 -> ``12.3%``."""
    return MISSING if is_missing(x) else f"{100 * x:.{digits}f}%"


def decimals(x: float | None, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals, or the missing-value mark when there is none."""
    return MISSING if is_missing(x) else f"{x:.{digits}f}"


def pvalue(p: float | None) -> str:
    """``0`` for an exact zero, scientific notation below SCIENTIFIC_BELOW, else three decimals."""
    if is_missing(p):
        return MISSING
    if p == 0:
        return "0"
    return f"{p:.2e}" if p < SCIENTIFIC_BELOW else f"{p:.3f}"


# Readable names of the analysis tables' columns (objrel.analysis.flag_tables and .significance), short enough
# for a table header at 1,400 px; a column not listed here is shown under its own name.
COLUMN_LABELS = {
    "class_name": "class",
    "mr1": "MR-1 flags", "mr2": "MR-2 flags", "both": "MR-1&2 flags",
    "mr1_ratio": "MR-1 share", "mr2_ratio": "MR-2 share", "both_ratio": "MR-1&2 share",
    "interval": "object area",
    "original": "accuracy", "unreliable": "unreliable", "unreliable_accuracy": "unreliable acc.",
    "reliable": "reliable", "reliable_accuracy": "reliable acc.", "delta": "reliable - all",
    "n_models": "runs flagging", "inputs": "images", "sample_id": "sample",
}


def readable(column: str) -> str:
    """A column's name for people (``COLUMN_LABELS``), else the column name itself."""
    return COLUMN_LABELS.get(column, column)
