"""Agreement of k raters: Fleiss' kappa and Krippendorff's alpha (nominal), with intervals, per label and pairwise.

The input is a table of items x raters: ``ratings[i][r]`` is rater r's call on item i, one of ``categories``, or
None where rater r did not call item i.  With r_ic the number of raters who called item i into category c,
r_i = sum_c r_ic, and n' the items with at least one call:

* **Fleiss' kappa** (Fleiss 1971, "Measuring nominal scale agreement among many raters", Psychol. Bull. 76(5),
  378-382), in the form of Gwet (Handbook of Inter-Rater Reliability, 4th ed. 2014, s. 2.4 and 5.3) that also
  takes items some raters skipped:

      p_a = mean over items with r_i >= 2 of  sum_c r_ic (r_ic - 1) / (r_i (r_i - 1))
      pi_c = mean over the n' items of  r_ic / r_i,      p_e = sum_c pi_c^2,      kappa = (p_a - p_e) / (1 - p_e)

  With every item called by the same m raters this is Fleiss' 1971 formula exactly (``statsmodels``'
  ``fleiss_kappa``; the tests check both).  Its interval is kappa -+ t se with Student's t on n' - 1 degrees of
  freedom and Gwet's linearised variance (Handbook 2014 s. 5.3; R's ``irrCAC::fleiss.kappa.raw``):

      kappa_i = (n' / n2) (p_a,i - p_e [r_i >= 2]) / (1 - p_e),   p_e,i = sum_c r_ic pi_c / r_i,
      kappa*_i = kappa_i - 2 (1 - kappa) (p_e,i - p_e) / (1 - p_e),   Var = sum_i (kappa*_i - kappa)^2 / (n' (n' - 1))

  (n2 the items with r_i >= 2), the convention of the pairwise AC1 and PABAK intervals
  (``objrel.review.coefficients``).  Fleiss, Nee & Landis (1979) give the standard error *under kappa = 0*,
  right for a test of no agreement but not for an interval around a kappa that is not 0, so it is not used.
* **Krippendorff's alpha, nominal** (Krippendorff 2011, "Computing Krippendorff's alpha-reliability",
  Annenberg School for Communication, University of Pennsylvania, s. "C. Nominal data, any number of
  observers, missing values"): over the pairable items (m_u = r_u >= 2 calls), the coincidences
  o_ck = sum_u (number of c-k pairs of calls in u) / (m_u - 1), n_c = sum_k o_ck, n = sum_c n_c, and

      alpha = 1 - (n - 1) (n - sum_c o_cc) / (n^2 - sum_c n_c^2)

  (the ``krippendorff`` package's ``alpha(level_of_measurement="nominal")``; the tests check it).  Its
  interval is a percentile bootstrap over the pairable items (``ALPHA_BOOTSTRAP_RESAMPLES`` resamples drawn
  with replacement by numpy's PCG64 generator from an explicit ``seed``, so a page shows the same interval
  on every view); a resample whose alpha is 0/0 (one category only) is left out and counted.
* **Per label**: for each category c, the same two coefficients of the table recoded to "c" against "any
  other call".  Fleiss (1971, eq. 11) calls this the kappa of category c; a low value names the call the
  raters disagree on.  ``disputed`` counts the items on which some but not all of their raters called c.
* **Pairwise**: Cohen's kappa, Gwet's AC1 and PABAK of every pair of raters over the items both called
  (``objrel.review.coefficients.agreement_coefficients``, unchanged).

A coefficient is *undefined* (value None, ``note`` says why) when the data cannot estimate it: no item with two
calls, or every call in one category (chance agreement 1: 0/0).  A defined value lacks an interval (``lo``/``hi``
None, ``note`` says why) with fewer than ``MIN_INTERVAL_ITEMS`` items or a standard error of 0: an interval is
never zero-width.  Pure: numpy and scipy, imported where used; nothing of the store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

from objrel.review.coefficients import (DEFAULT_CONFIDENCE, MIN_INTERVAL_ITEMS, AgreementCoefficients,
                                        _check_categories, _check_confidence, _t_quantile, agreement_coefficients)
from objrel.review.judgments import VERDICTS

FLEISS = "fleiss_kappa"
ALPHA = "krippendorff_alpha"
MANY_RATER_LABELS = {FLEISS: "Fleiss' kappa", ALPHA: "Krippendorff's alpha"}
MANY_RATER_METHODS = {
    FLEISS: "kappa -+ t se; se linearised (Gwet, Handbook 2014 s. 5.3); t on n - 1 degrees of freedom",
    ALPHA: "percentile bootstrap over items ({resamples} resamples, seed {seed})",
}
# Resamples of the bootstrap interval of alpha, and the seed its generator starts from unless one is given.
ALPHA_BOOTSTRAP_RESAMPLES = 2000
ALPHA_BOOTSTRAP_SEED = 43
# Floating-point slack for a chance agreement of 1 and a standard error of 0.
_EPS = 1e-12


@dataclass(frozen=True)
class RaterCoefficient:
    """One k-rater coefficient (``name``: ``FLEISS`` or ``ALPHA``): ``value`` with interval [``lo``, ``hi``]
    at the result's confidence; ``se`` for Fleiss' kappa (None for alpha, whose interval is a bootstrap);
    ``n_items``: the items it is computed over; ``observed``/``expected``: its observed and chance agreement
    (for alpha 1 - D_o and 1 - D_e).  ``value`` None: undefined, ``note`` says why; a defined value without an
    interval says why in ``note`` too."""

    name: str
    value: float | None
    se: float | None
    lo: float | None
    hi: float | None
    n_items: int
    observed: float | None
    expected: float | None
    method: str
    note: str = ""

    @property
    def defined(self) -> bool:
        """True when the data estimate the coefficient."""
        return self.value is not None

    @property
    def has_interval(self) -> bool:
        """True when the coefficient has both interval bounds."""
        return self.lo is not None and self.hi is not None

    @property
    def label(self) -> str:
        """The coefficient's display name."""
        return MANY_RATER_LABELS.get(self.name, self.name)

    def to_dict(self) -> dict:
        """The coefficient as a dict."""
        return asdict(self)


@dataclass(frozen=True)
class LabelAgreement:
    """Agreement on one category: ``calls`` made into it (``share`` of all calls), ``used_on`` items at least one
    rater called it, ``disputed`` of them not every rater of the item did, and Fleiss' kappa and Krippendorff's
    alpha of the category against any other call."""

    category: str
    calls: int
    share: float
    used_on: int
    disputed: int
    fleiss: RaterCoefficient
    alpha: RaterCoefficient


@dataclass(frozen=True)
class PairAgreement:
    """Cohen's kappa, Gwet's AC1 and PABAK of two raters over the items both called."""

    rater_a: str
    rater_b: str
    coefficients: AgreementCoefficients


@dataclass(frozen=True)
class ManyRaterAgreement:
    """The agreement of ``raters`` over ``n_items`` items (those with at least one call): Fleiss' kappa and
    Krippendorff's alpha of all calls, the same per category (``labels``) and the coefficients of every pair
    (``pairs``, in the raters' order); ``calls``: the calls counted; ``confidence``: of every interval."""

    raters: tuple[str, ...]
    categories: tuple[str, ...]
    n_items: int
    calls: int
    fleiss: RaterCoefficient
    alpha: RaterCoefficient
    labels: tuple[LabelAgreement, ...]
    pairs: tuple[PairAgreement, ...]
    confidence: float
    seed: int

    def label(self, category: str) -> LabelAgreement:
        """The agreement on ``category``; KeyError for a category not on the scale."""
        for row in self.labels:
            if row.category == category:
                return row
        raise KeyError(f"no category {category!r}; the scale is {list(self.categories)}")


# ---------------------------------------------------------------- the table


def category_counts(ratings: Sequence[Sequence[str | None]], categories: Sequence[str]) -> list[list[int]]:
    """r_ic: for each item (row of ``ratings``) the number of its calls in each of ``categories``; None cells
    (no call) count nowhere.  Raises ValueError for a call outside ``categories``."""
    idx = {c: i for i, c in enumerate(categories)}
    out = []
    for i, row in enumerate(ratings):
        counts = [0] * len(idx)
        for call in row:
            if call is None:
                continue
            if call not in idx:
                raise ValueError(f"item {i} has a call outside the categories {list(categories)}: {call!r}")
            counts[idx[call]] += 1
        out.append(counts)
    return out


def _array(counts):
    """A numpy float array items x categories of a table of counts (0 x 1 for no items)."""
    import numpy as np

    return np.asarray(counts, dtype=float) if len(counts) else np.zeros((0, 1))


def _undefined(name: str, n: int, why: str, method: str) -> RaterCoefficient:
    return RaterCoefficient(name, None, None, None, None, n, None, None, method, f"undefined: {why}")


# Why a coefficient of calls all in one category is undefined.
ONE_CATEGORY = "every call falls in one category, so chance agreement is 1 and the coefficient is 0/0"


# ---------------------------------------------------------------- Fleiss' kappa


def fleiss_kappa(counts: Sequence[Sequence[int]], confidence: float = DEFAULT_CONFIDENCE) -> RaterCoefficient:
    """Fleiss' kappa of a table of counts r_ic (items x categories; see the module's docstring for the formula,
    Fleiss 1971 in Gwet's 2014 form for items some raters skipped) with Gwet's linearised standard error and the
    interval kappa -+ t se clipped to [-1, 1].  Items without a call are left out."""
    import numpy as np

    confidence = _check_confidence(confidence)
    method = MANY_RATER_METHODS[FLEISS]
    r = _array(counts)
    r = r[r.sum(axis=1) > 0]
    n = r.shape[0]
    ri = r.sum(axis=1)
    two = ri >= 2
    n2 = int(two.sum())
    if n2 == 0:
        return _undefined(FLEISS, n, "no item has two calls", method)
    pa_i = np.zeros(n)
    pa_i[two] = (r[two] * (r[two] - 1)).sum(axis=1) / (ri[two] * (ri[two] - 1))
    p_a = float(pa_i[two].mean())
    pi = (r / ri[:, None]).mean(axis=0)
    p_e = float(pi @ pi)
    if 1 - p_e < _EPS:
        return _undefined(FLEISS, n, ONE_CATEGORY, method)
    kappa = (p_a - p_e) / (1 - p_e)
    kappa_i = (n / n2) * (pa_i - p_e * two) / (1 - p_e)
    pe_i = (r @ pi) / ri
    kappa_star = kappa_i - 2 * (1 - kappa) * (pe_i - p_e) / (1 - p_e)
    if n < MIN_INTERVAL_ITEMS:
        return RaterCoefficient(FLEISS, kappa, None, None, None, n, p_a, p_e, method,
                                f"no interval: it needs at least {MIN_INTERVAL_ITEMS} items, got {n}")
    se = math.sqrt(float(np.sum((kappa_star - kappa) ** 2)) / (n * (n - 1)))
    if se < _EPS:
        return RaterCoefficient(FLEISS, kappa, 0.0, None, None, n, p_a, p_e, method,
                                "no interval: the standard error is 0, which would give a zero-width interval")
    half = _t_quantile(confidence, n) * se
    return RaterCoefficient(FLEISS, kappa, se, max(-1.0, kappa - half), min(1.0, kappa + half), n, p_a, p_e,
                            method)


# ---------------------------------------------------------------- Krippendorff's alpha


def _alpha_parts(r):
    """(per pairable item: its calls m_u, its within-item coincidences sum_c r_uc (r_uc - 1) / (m_u - 1), and
    its counts) of a numpy table of counts."""
    m = r.sum(axis=1)
    keep = m >= 2
    r, m = r[keep], m[keep]
    same = (r * (r - 1)).sum(axis=1) / (m - 1)
    return m, same, r


def _alpha_of(n, same, n_c):
    """alpha = 1 - (n - 1) (n - sum_c o_cc) / (n^2 - sum_c n_c^2), elementwise over numpy arrays; NaN where
    the denominator is 0."""
    import numpy as np

    den = n ** 2 - (n_c ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > _EPS, 1 - (n - 1) * (n - same) / np.where(den > _EPS, den, 1.0), np.nan)


def krippendorff_alpha(counts: Sequence[Sequence[int]], confidence: float = DEFAULT_CONFIDENCE,
                       seed: int = ALPHA_BOOTSTRAP_SEED,
                       resamples: int = ALPHA_BOOTSTRAP_RESAMPLES) -> RaterCoefficient:
    """Krippendorff's alpha for nominal data of a table of counts r_ic (Krippendorff 2011; the formula in the
    module's docstring) over the items with at least two calls, with a percentile bootstrap interval over those
    items: ``resamples`` resamples drawn with numpy's PCG64 generator seeded with ``seed``."""
    import numpy as np

    confidence = _check_confidence(confidence)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive whole number; got {resamples!r}")
    method = MANY_RATER_METHODS[ALPHA].format(resamples=resamples, seed=seed)
    r = _array(counts)
    m, same, r = _alpha_parts(r)
    units = len(m)
    if units == 0:
        return _undefined(ALPHA, 0, "no item has two calls", method)
    n, n_c = float(m.sum()), r.sum(axis=0)
    value = float(_alpha_of(n, float(same.sum()), n_c))
    if math.isnan(value):
        return _undefined(ALPHA, units, ONE_CATEGORY, method)
    observed = float(same.sum()) / n
    expected = float((n_c ** 2).sum() - n) / (n * (n - 1))
    if units < MIN_INTERVAL_ITEMS:
        return RaterCoefficient(ALPHA, value, None, None, None, units, observed, expected, method,
                                f"no interval: it needs at least {MIN_INTERVAL_ITEMS} items, got {units}")
    rng = np.random.Generator(np.random.PCG64(seed))
    weights = rng.multinomial(units, np.full(units, 1.0 / units), size=resamples).astype(float)
    boot = _alpha_of(weights @ m, weights @ same, weights @ r)
    kept = boot[~np.isnan(boot)]
    dropped = resamples - kept.size
    if kept.size < MIN_INTERVAL_ITEMS or float(kept.max() - kept.min()) < _EPS:
        return RaterCoefficient(ALPHA, value, None, None, None, units, observed, expected, method,
                                "no interval: every resample gives the same alpha, which would give a zero-width "
                                "interval")
    tail = (1 - confidence) / 2
    lo, hi = (float(x) for x in np.quantile(kept, [tail, 1 - tail]))
    note = (f"{dropped} of {resamples} resamples had a single category (alpha 0/0) and were left out"
            if dropped else "")
    return RaterCoefficient(ALPHA, value, None, max(-1.0, lo), min(1.0, hi), units, observed, expected, method,
                            note)


# ---------------------------------------------------------------- everything for k raters


def _label_row(counts, j: int, category: str, total: int, confidence: float, seed: int) -> LabelAgreement:
    binary = [[row[j], sum(row) - row[j]] for row in counts]
    calls = sum(row[j] for row in counts)
    used = [row for row in counts if row[j] > 0]
    return LabelAgreement(category=category, calls=calls, share=calls / total if total else 0.0,
                          used_on=len(used), disputed=sum(1 for row in used if row[j] < sum(row)),
                          fleiss=fleiss_kappa(binary, confidence), alpha=krippendorff_alpha(binary, confidence, seed))


def many_rater_agreement(ratings: Sequence[Sequence[str | None]], raters: Sequence[str],
                         categories: Sequence[str] = VERDICTS, confidence: float = DEFAULT_CONFIDENCE,
                         seed: int = ALPHA_BOOTSTRAP_SEED) -> ManyRaterAgreement:
    """Fleiss' kappa and Krippendorff's alpha of ``ratings`` (items x ``raters``, None where a rater did not call
    the item), the same for each of ``categories``, and the pairwise kappa, AC1 and PABAK.  Items no rater
    called are left out.  Raises ValueError for a row whose length is not the number of raters, repeated rater
    names, a call outside ``categories`` or a confidence outside (0, 1)."""
    cats = _check_categories(categories)
    confidence = _check_confidence(confidence)
    names = tuple(raters)
    if len(set(names)) != len(names):
        raise ValueError(f"rater names must be distinct; got {list(names)}")
    rows = [tuple(row) for row in ratings]
    for i, row in enumerate(rows):
        if len(row) != len(names):
            raise ValueError(f"item {i} has {len(row)} cells, expected one per rater ({len(names)})")
    counts = [c for c in category_counts(rows, cats) if sum(c) > 0]
    total = sum(map(sum, counts))
    labels = tuple(_label_row(counts, j, c, total, confidence, seed) for j, c in enumerate(cats))
    pairs = []
    for a, b in combinations(range(len(names)), 2):
        both = [(row[a], row[b]) for row in rows if row[a] is not None and row[b] is not None]
        pairs.append(PairAgreement(names[a], names[b],
                                   agreement_coefficients([x for x, _ in both], [y for _, y in both], cats,
                                                          confidence)))
    return ManyRaterAgreement(raters=names, categories=cats, n_items=len(counts), calls=total,
                              fleiss=fleiss_kappa(counts, confidence),
                              alpha=krippendorff_alpha(counts, confidence, seed),
                              labels=labels, pairs=tuple(pairs), confidence=confidence, seed=seed)
