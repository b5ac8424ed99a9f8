"""Number formats the pages show (plain functions: no Streamlit).

Missing values (None or NaN) show as ``MISSING``.
"""

from __future__ import annotations

import math

MISSING = "-"
# Below this a p-value is written in scientific notation (2.3e-05), above with three decimals.
SCIENTIFIC_BELOW = 0.001


def is_missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def percent(x: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage: 0.1234 -> ``12.3%``."""
    return MISSING if is_missing(x) else f"{100 * x:.{digits}f}%"


def decimals(x: float | None, digits: int = 3) -> str:
    return MISSING if is_missing(x) else f"{x:.{digits}f}"


def pvalue(p: float | None) -> str:
    """``0`` for an exact zero, scientific notation below SCIENTIFIC_BELOW, else three decimals."""
    if is_missing(p):
        return MISSING
    if p == 0:
        return "0"
    return f"{p:.2e}" if p < SCIENTIFIC_BELOW else f"{p:.3f}"
