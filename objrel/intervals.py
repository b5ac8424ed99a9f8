"""Confidence intervals of proportions: one Wilson score interval for every table that shows one
(the Agreement page's precision, the planted benchmark's precision and recall)."""

from __future__ import annotations

import math

# z of a two-sided 95% normal interval.  A larger z widens every interval.
Z_95 = 1.959963984540054


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval of the proportion ``k / n`` (fractions in [0, 1]); None when ``n == 0``.

    Exact 0 and 1 at the ends (the formula's rounding gave 0.9999999999999999)."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi
