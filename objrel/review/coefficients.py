"""Agreement of two raters beyond Cohen's kappa: Gwet's AC1, PABAK and the prevalence, with intervals.

Kappa is paradoxically low when one answer dominates (Feinstein & Cicchetti 1990, "High agreement but low
kappa"): two reviewers who agree on 18 of 20 flags, almost all true positives, can get a kappa near 0.
Gwet's AC1 (Gwet 2008) and the prevalence- and bias-adjusted kappa PABAK (Byrt, Bishop & Carlin 1993) are the
two usual companions; the prevalence itself is reported beside them so a reader can see why they differ.

For two raters who each called the same n items into one of q nominal categories, with p_kl the share of items
rater A called k and rater B called l, p_k. and p_.l the marginal shares and p_o = sum_k p_kk:

* kappa: ``cohen_kappa`` (Cohen 1960; standard error of Fleiss, Cohen & Everitt 1969),
  interval kappa -+ z se with the normal quantile z, as statsmodels reports it.  Its numbers are reused here
  unchanged.
* AC1: the two-rater formulas of Gwet (2008, Br. J. Math. Stat. Psychol. 61, s. 4 and eq. 4-5 for AC1;
  the variance of Gwet, Handbook of Inter-Rater Reliability, 4th ed. 2014, s. 4.2, eq. 4.2.4), the formulas
  of R's ``irrCAC::gwet.ac1.table`` and Python's ``irrCAC.table.CAC.gwet``.
* PABAK: (q p_o - 1) / (q - 1) (Byrt et al. 1993, J. Clin. Epidemiol. 46(5), p. 425, for q = 2: 2 p_o - 1);
  for any q it is Brennan & Prediger's (1981) coefficient with chance agreement 1/q, whose variance is
  Gwet's Handbook s. 4.2 (``irrCAC.table.CAC.bp``).
* The AC1 and PABAK intervals are value -+ t se with Student's t quantile on n - 1 degrees of freedom, the
  convention of Gwet's Handbook and of irrCAC, which the tests check them against.  Every interval is clipped
  to the coefficient's range.

A coefficient is *undefined* (``defined`` False, value and interval None) when the data cannot estimate it:
no items, kappa with p_e = 1 (both raters used one category throughout), kappa with a constant rater (kappa is
then 0 whatever the other rater does, with standard error exactly 0: statsmodels reports se 0 and a NaN z).
An interval is never zero-width: when the standard error is 0 (perfect agreement, say) or n < 2 the value
stays but ``lo``/``hi`` are None and ``note`` says why.

``items_for_width`` plans a sample: the number of items whose interval is at most a chosen width, from the
same variance formulas.  Pure: numpy and scipy only, nothing of the store.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from objrel.review.judgments import VERDICT_LABELS, VERDICTS

if TYPE_CHECKING:  # pandas is imported lazily: the review workers do not need it
    import pandas as pd

# Confidence level of the kappa interval.
KAPPA_CI_LEVEL = 0.95
# Landis & Koch (1977): upper bound (inclusive) of each band; kappa < 0 is "poor".
LANDIS_KOCH_BANDS = ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"),
                     (1.00, "almost perfect"))
POOR_BAND = "poor"
UNDEFINED_BAND = "undefined"
# Floating-point slack for p_e == 1 and for band edges such as kappa = 0.2.
_EPS = 1e-12


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa of two raters over ``n`` items.

    observed (p_o) and expected (p_e) agreement are fractions in [0, 1]; kappa =
    (p_o - p_e) / (1 - p_e); se is the asymptotic standard error named by ``se_method``
    (``fleiss``: Fleiss, Cohen & Everitt 1969, the default; ``cohen1960``: Cohen's 1960
    approximation); ci_low/ci_high is kappa -+ z se at ``ci_level``, clipped to [-1, 1].
    kappa, se and the interval are None (band ``undefined``) when p_e == 1, i.e. both raters
    used one and the same category for every item.  With the ``fleiss`` standard error, se and the
    interval are None when one rater used a single category (kappa is then 0 whatever the other
    does and the variance formula gives exactly 0; statsmodels reports NaN); ``note`` says why.
    ``confusion[i][j]`` counts items rater A called ``categories[i]`` and rater B ``categories[j]``.
    """

    kappa: float | None
    observed: float
    expected: float
    n: int
    se: float | None
    ci_low: float | None
    ci_high: float | None
    ci_level: float
    band: str
    categories: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]
    se_method: str = "fleiss"
    note: str = ""           # why kappa or its interval is undefined ("" when both are given)

    def to_dict(self) -> dict:
        """The table as a JSON-ready dict."""
        d = asdict(self)
        d["categories"] = list(self.categories)
        d["confusion"] = [list(r) for r in self.confusion]
        return d

    def confusion_frame(self, name_a: str = "A", name_b: str = "B") -> pd.DataFrame:
        """The confusion table as a DataFrame: rows ``name_a``'s calls, columns ``name_b``'s."""
        import pandas as pd

        return pd.DataFrame([list(r) for r in self.confusion],
                            index=pd.Index([f"{name_a}: {c}" for c in self.categories]),
                            columns=[f"{name_b}: {c}" for c in self.categories])



# ---------------------------------------------------------------- kappa


def landis_koch_band(kappa: float | None) -> str:
    """Landis & Koch (1977): < 0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate,
    0.61-0.80 substantial, 0.81-1 almost perfect (upper bounds inclusive); None -> undefined."""
    if kappa is None or math.isnan(kappa):
        return UNDEFINED_BAND
    if kappa < -_EPS:
        return POOR_BAND
    for upper, name in LANDIS_KOCH_BANDS:
        if kappa <= upper + _EPS:
            return name
    return LANDIS_KOCH_BANDS[-1][1]


# Names of the kappa standard errors ``cohen_kappa`` offers.
KAPPA_SE_FLEISS = "fleiss"
KAPPA_SE_COHEN1960 = "cohen1960"
KAPPA_SE_METHODS = (KAPPA_SE_FLEISS, KAPPA_SE_COHEN1960)


def _kappa_variance_fleiss(table: list[list[int]], n: int, kappa: float, p_e: float) -> float:
    """Var(kappa) of Fleiss, Cohen & Everitt (1969, Psychol. Bull. 72(5), eq. 13), the asymptotic
    variance statsmodels reports as ``var_kappa``.  With p_ij the cell shares, p_i. the row (rater A)
    and p_.j the column (rater B) shares:

      A = sum_i p_ii (1 - (p_i. + p_.i)(1 - kappa))^2
      B = (1 - kappa)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
      C = (kappa - p_e (1 - kappa))^2
      Var = (A + B - C) / (n (1 - p_e)^2)

    It is exactly 0 when one rater used a single category (then kappa = 0 for every split of the
    other rater's calls) and when agreement is perfect; rounding noise below zero is clipped."""
    k = len(table)
    p = [[table[i][j] / n for j in range(k)] for i in range(k)]
    row = [sum(p[i]) for i in range(k)]
    col = [sum(p[i][j] for i in range(k)) for j in range(k)]
    a = sum(p[i][i] * (1 - (row[i] + col[i]) * (1 - kappa)) ** 2 for i in range(k))
    b = (1 - kappa) ** 2 * sum(p[i][j] * (col[i] + row[j]) ** 2
                               for i in range(k) for j in range(k) if i != j)
    c = (kappa - p_e * (1 - kappa)) ** 2
    return max(0.0, (a + b - c) / (n * (1 - p_e) ** 2))


def cohen_kappa(calls_a: Sequence[str], calls_b: Sequence[str], categories: Sequence[str] = VERDICTS,
                ci_level: float = KAPPA_CI_LEVEL, se_method: str = KAPPA_SE_FLEISS) -> Kappa:
    """Cohen's kappa of two raters who each called the same ``n`` items.

    p_o = share of items with the same call; p_e = sum over categories of the product of the
    two raters' marginal shares; kappa = (p_o - p_e) / (1 - p_e) (Cohen 1960).  Standard error,
    chosen by ``se_method``:

    * ``fleiss`` (default): the asymptotic SE of Fleiss, Cohen & Everitt (1969), see
      ``_kappa_variance_fleiss``; it is what ``statsmodels.stats.inter_rater.cohens_kappa`` reports
      as ``std_kappa`` (and SAS/Stata as the ASE).  When one rater's calls are constant the formula gives
      exactly 0; se and the interval are then None (statsmodels: NaN), with ``note`` saying why.
    * ``cohen1960``: Cohen's (1960) approximation sqrt(p_o (1 - p_o) / (n (1 - p_e)^2)), which
      treats p_e as known and so ignores the marginals' sampling error.

    The interval is kappa -+ z se (z = Phi^-1(1 - (1 - ci_level) / 2) = 1.96 for 95%), clipped to
    [-1, 1].  When p_e == 1 (both raters used one and the same category throughout, so p_o == 1
    too) kappa is 0/0: kappa, se and the interval are None and the band is ``undefined``; we do
    not report 1, because such data cannot show agreement beyond chance.

    Raises ValueError for lists of different lengths, no items, a call outside ``categories`` or
    an unknown ``se_method``.
    """
    a, b = list(calls_a), list(calls_b)
    cats = tuple(categories)
    if se_method not in KAPPA_SE_METHODS:
        raise ValueError(f"se_method must be one of {list(KAPPA_SE_METHODS)}; got {se_method!r}")
    if len(cats) < 2 or len(set(cats)) != len(cats):
        raise ValueError(f"categories must be at least two distinct values; got {list(cats)}")
    if len(a) != len(b):
        raise ValueError(f"both raters must call the same items: {len(a)} calls against {len(b)}")
    if not a:
        raise ValueError("kappa needs at least one item both raters called; got none")
    for who, calls in (("A", a), ("B", b)):
        bad = sorted({c for c in calls if c not in cats}, key=str)
        if bad:
            raise ValueError(f"rater {who} made calls outside the categories {list(cats)}: {bad}")
    if not 0 < ci_level < 1:
        raise ValueError(f"ci_level must lie strictly between 0 and 1; got {ci_level!r}")
    idx = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    table = [[0] * k for _ in range(k)]
    for x, y in zip(a, b):
        table[idx[x]][idx[y]] += 1
    n = len(a)
    p_o = sum(table[i][i] for i in range(k)) / n
    row = [sum(table[i]) / n for i in range(k)]
    col = [sum(table[i][j] for i in range(k)) / n for j in range(k)]
    p_e = sum(r * c for r, c in zip(row, col))
    confusion = tuple(tuple(r) for r in table)
    if 1 - p_e < _EPS:
        return Kappa(kappa=None, observed=p_o, expected=p_e, n=n, se=None, ci_low=None, ci_high=None,
                     ci_level=ci_level, band=UNDEFINED_BAND, categories=cats, confusion=confusion,
                     se_method=se_method, note=f"both raters called every item {a[0]!r}: chance agreement is 1 "
                                               "and kappa is 0/0")
    kappa = (p_o - p_e) / (1 - p_e)
    constant = [who for who, calls in (("A", a), ("B", b)) if len(set(calls)) == 1]
    if se_method == KAPPA_SE_COHEN1960:
        se = math.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2))
    elif constant:
        # kappa is 0 whatever the other rater does; the variance formula gives exactly 0, which would be a
        # zero-width interval from any number of items.  statsmodels' cohens_kappa reports NaN: undefined.
        return Kappa(kappa=kappa, observed=p_o, expected=p_e, n=n, se=None, ci_low=None, ci_high=None,
                     ci_level=ci_level, band=landis_koch_band(kappa), categories=cats, confusion=confusion,
                     se_method=se_method, note=constant_rater_note(a if constant[0] == "A" else b))
    else:
        se = math.sqrt(_kappa_variance_fleiss(table, n, kappa, p_e))
    z = _z_quantile(ci_level)
    return Kappa(kappa=kappa, observed=p_o, expected=p_e, n=n, se=se, ci_low=max(-1.0, kappa - z * se),
                 ci_high=min(1.0, kappa + z * se), ci_level=ci_level, band=landis_koch_band(kappa),
                 categories=cats, confusion=confusion, se_method=se_method)


# ---------------------------------------------------------------- beyond kappa

# Names of the coefficients, as ``Coefficient.name`` and ``items_for_width(coefficient=...)`` spell them.
KAPPA = "kappa"
AC1 = "ac1"
PABAK = "pabak"
COEFFICIENTS = (KAPPA, AC1, PABAK)
COEFFICIENT_LABELS = {KAPPA: "Cohen's kappa", AC1: "Gwet's AC1", PABAK: "PABAK"}
# How each interval is built (shown beside it).
INTERVAL_METHODS = {
    KAPPA: "kappa -+ z se; se of Fleiss, Cohen & Everitt (1969); z the normal quantile",
    AC1: "AC1 -+ t se; se of Gwet (2008; Handbook 2014 s. 4.2); t on n - 1 degrees of freedom",
    PABAK: "PABAK -+ t se; se of Brennan-Prediger (Gwet, Handbook 2014 s. 4.2); t on n - 1 degrees of freedom",
}
DEFAULT_CONFIDENCE = 0.95
# Fewest items an interval is computed from (t on n - 1 degrees of freedom needs n >= 2).
MIN_INTERVAL_ITEMS = 2
# Largest sample the planner returns; a wider target than this cannot be reached is refused.
MAX_PLANNED_ITEMS = 10_000_000


def constant_rater_note(calls: Sequence[str]) -> str:
    """Why kappa has no interval when one reviewer made the same call on every item, in the page's words."""
    said = VERDICT_LABELS.get(calls[0], str(calls[0]))
    return (f"interval undefined: one reviewer called every item {said}, so kappa is 0 whatever the other "
            "reviewer does and has no standard error")


@dataclass(frozen=True)
class Coefficient:
    """One agreement coefficient: ``value`` with standard error ``se`` and interval [``lo``, ``hi``].

    ``defined`` False: the data cannot estimate it (value, se and interval None; ``note`` says why).
    A defined value may still lack an interval (``lo``/``hi`` None, ``note`` says why): a standard error of 0
    would give a zero-width interval, which would claim certainty no sample gives."""

    name: str
    value: float | None
    se: float | None
    lo: float | None
    hi: float | None
    defined: bool
    note: str = ""
    method: str = ""

    @property
    def has_interval(self) -> bool:
        """True when the coefficient has both interval bounds."""
        return self.lo is not None and self.hi is not None

    @property
    def label(self) -> str:
        """The coefficient's display name."""
        return COEFFICIENT_LABELS.get(self.name, self.name)

    def to_dict(self) -> dict:
        """The coefficient as a dict."""
        return asdict(self)


@dataclass(frozen=True)
class CategoryShare:
    """How often each rater used one category: ``share_a``, ``share_b`` and ``pooled`` (their mean)."""

    category: str
    share_a: float
    share_b: float
    pooled: float


@dataclass(frozen=True)
class Prevalence:
    """How the calls spread over the categories.

    ``shares``: each category's marginal shares; ``dominant``: the category with the largest pooled share and
    ``dominant_share`` that share.  ``index`` and ``bias_index`` are Byrt, Bishop & Carlin's (1993, p. 424)
    prevalence index |p_11 - p_22| and bias index |p_12 - p_21| over the first two categories (for the
    verdicts: both said tp, both said fp; A tp and B fp, A fp and B tp); None without items."""

    shares: tuple[CategoryShare, ...]
    dominant: str | None
    dominant_share: float | None
    index: float | None
    bias_index: float | None
    index_categories: tuple[str, str]


@dataclass(frozen=True)
class AgreementCoefficients:
    """Agreement of two raters over ``n`` items both called: ``observed`` (p_o, None without items),
    the three coefficients, the prevalence, the confusion table (rows rater A, columns rater B, in
    ``categories`` order), the confidence level of the intervals and kappa's Landis & Koch band."""

    n: int
    categories: tuple[str, ...]
    observed: float | None
    kappa: Coefficient
    ac1: Coefficient
    pabak: Coefficient
    prevalence: Prevalence
    confusion: tuple[tuple[int, ...], ...]
    confidence: float
    kappa_band: str

    @property
    def coefficients(self) -> tuple[Coefficient, Coefficient, Coefficient]:
        """Kappa, AC1 and PABAK, in that order."""
        return (self.kappa, self.ac1, self.pabak)

    def to_dict(self) -> dict:
        """The coefficients as a JSON-ready dict."""
        d = asdict(self)
        d["categories"] = list(self.categories)
        d["confusion"] = [list(r) for r in self.confusion]
        return d


# ---------------------------------------------------------------- checks and small helpers


def _check_confidence(confidence: float) -> float:
    if not isinstance(confidence, (int, float)) or isinstance(confidence, bool) or not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1; got {confidence!r}")
    return float(confidence)


def _check_categories(categories: Sequence[str]) -> tuple[str, ...]:
    cats = tuple(categories)
    if len(cats) < 2 or len(set(cats)) != len(cats):
        raise ValueError(f"categories must be at least two distinct values; got {list(cats)}")
    return cats


def _t_quantile(confidence: float, n: int) -> float:
    """The two-sided Student t quantile of ``confidence`` on n - 1 degrees of freedom: scipy's inverse t
    distribution function itself (``scipy.special.stdtrit``, what ``scipy.stats.t.ppf`` calls), without
    importing scipy.stats, which takes over a second on a page's first view."""
    from scipy.special import stdtrit

    return float(stdtrit(n - 1, 1 - (1 - confidence) / 2))


def _z_quantile(confidence: float) -> float:
    """The two-sided standard normal quantile of ``confidence`` (the standard library's, equal to scipy's
    ``norm.ppf`` within 1e-15; scipy.stats takes over a second to import on a page's first view)."""
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def _undefined(name: str, why: str) -> Coefficient:
    return Coefficient(name, None, None, None, None, False, f"undefined: {why}", INTERVAL_METHODS[name])


def _with_interval(name: str, value: float, se: float, half: float, n: int, low_bound: float) -> Coefficient:
    """``value`` with the interval value -+ ``half`` clipped to [``low_bound``, 1]; no interval (note why)
    when se is 0 or n is below ``MIN_INTERVAL_ITEMS``."""
    if n < MIN_INTERVAL_ITEMS:
        return Coefficient(name, value, se, None, None, True,
                           f"no interval: it needs at least {MIN_INTERVAL_ITEMS} items, got {n}",
                           INTERVAL_METHODS[name])
    if not se > 0:
        return Coefficient(name, value, se, None, None, True,
                           "no interval: the standard error is 0 (every item falls where the formula has no "
                           "spread, e.g. perfect agreement), which would give a zero-width interval",
                           INTERVAL_METHODS[name])
    return Coefficient(name, value, se, max(low_bound, value - half), min(1.0, value + half), True, "",
                       INTERVAL_METHODS[name])


def _shares(table) -> tuple:
    """(p, row, col, p_o) of a numpy table of counts or shares."""
    import numpy as np

    p = np.asarray(table, dtype=float)
    p = p / p.sum()
    return p, p.sum(axis=1), p.sum(axis=0), float(np.trace(p))


# ---------------------------------------------------------------- the coefficients of one table


def _ac1_parts(table) -> tuple[float, float]:
    """(AC1, n * Var(AC1)) of a table of counts or shares (Gwet 2008 eq. 4-5; Handbook 2014 eq. 4.2.4):

      pi_k = (p_k. + p_.k) / 2,   p_e = sum_k pi_k (1 - pi_k) / (q - 1),   AC1 = (p_o - p_e) / (1 - p_e)
      n Var = [ sum_kl p_kl (w_kl - 2 (1 - AC1) (1 - (pi_k + pi_l) / 2) / (q - 1))^2
                - (p_o - 2 (1 - AC1) p_e)^2 ] / (1 - p_e)^2

    with w the identity (w_kk = 1, else 0); no finite-population correction."""
    import numpy as np

    p, row, col, p_o = _shares(table)
    q = p.shape[0]
    pi = (row + col) / 2
    p_e = float(np.sum(pi * (1 - pi)) / (q - 1))
    ac1 = (p_o - p_e) / (1 - p_e)
    w = np.eye(q)
    term = w - 2 * (1 - ac1) * (1 - (pi[:, None] + pi[None, :]) / 2) / (q - 1)
    nvar = (float(np.sum(p * term ** 2)) - (p_o - 2 * (1 - ac1) * p_e) ** 2) / (1 - p_e) ** 2
    return ac1, max(0.0, nvar)


def _pabak_parts(table) -> tuple[float, float]:
    """(PABAK, n * Var(PABAK)) of a table: PABAK = (q p_o - 1) / (q - 1) (Byrt et al. 1993), the
    Brennan-Prediger coefficient with chance agreement 1/q, whose variance (Gwet, Handbook 2014 s. 4.2;
    ``irrCAC.table.CAC.bp``) is n Var = (p_o - p_o^2) / (1 - 1/q)^2 for nominal categories."""
    p, _, _, p_o = _shares(table)
    q = p.shape[0]
    return (q * p_o - 1) / (q - 1), max(0.0, p_o * (1 - p_o)) / (1 - 1 / q) ** 2


def _kappa_parts(table) -> tuple[float, float] | None:
    """(kappa, n * Var(kappa)) of a table by Fleiss, Cohen & Everitt (1969), or None when p_e == 1."""
    p, row, col, p_o = _shares(table)
    p_e = float(row @ col)
    if 1 - p_e < _EPS:
        return None
    kappa = (p_o - p_e) / (1 - p_e)
    return kappa, _kappa_variance_fleiss(p.tolist(), 1, kappa, p_e)


def _prevalence(table, cats: tuple[str, ...]) -> Prevalence:
    n = sum(map(sum, table))
    first_two = (cats[0], cats[1])
    if n == 0:
        return Prevalence(tuple(CategoryShare(c, 0.0, 0.0, 0.0) for c in cats), None, None, None, None, first_two)
    _, row, col, _ = _shares(table)
    shares = tuple(CategoryShare(c, float(row[i]), float(col[i]), float((row[i] + col[i]) / 2))
                   for i, c in enumerate(cats))
    top = max(shares, key=lambda s: s.pooled)
    return Prevalence(shares=shares, dominant=top.category, dominant_share=top.pooled,
                      index=abs(table[0][0] - table[1][1]) / n, bias_index=abs(table[0][1] - table[1][0]) / n,
                      index_categories=first_two)


def agreement_coefficients(calls_a: Sequence[str], calls_b: Sequence[str], categories: Sequence[str] = VERDICTS,
                           confidence: float = DEFAULT_CONFIDENCE) -> AgreementCoefficients:
    """Cohen's kappa, Gwet's AC1 and PABAK of two raters, each with its interval, and the prevalence.

    ``calls_a[i]`` and ``calls_b[i]`` are the two raters' calls on item i, each one of ``categories`` (all of
    them count as the scale's q, used or not: AC1's and PABAK's chance agreement depend on it).  No items give
    every coefficient undefined (n = 0).  Raises ValueError for lists of different lengths, a call outside
    ``categories``, fewer than two categories or a confidence outside (0, 1)."""
    cats = _check_categories(categories)
    confidence = _check_confidence(confidence)
    a, b = list(calls_a), list(calls_b)
    if len(a) != len(b):
        raise ValueError(f"both raters must call the same items: {len(a)} calls against {len(b)}")
    for who, calls in (("A", a), ("B", b)):
        bad = sorted({c for c in calls if c not in cats}, key=str)
        if bad:
            raise ValueError(f"rater {who} made calls outside the categories {list(cats)}: {bad}")
    n, q = len(a), len(cats)
    idx = {c: i for i, c in enumerate(cats)}
    table = [[0] * q for _ in range(q)]
    for x, y in zip(a, b):
        table[idx[x]][idx[y]] += 1
    confusion = tuple(tuple(r) for r in table)
    if n == 0:
        why = "no item was called by both raters"
        return AgreementCoefficients(0, cats, None, _undefined(KAPPA, why), _undefined(AC1, why),
                                     _undefined(PABAK, why), _prevalence(table, cats), confusion, confidence,
                                     landis_koch_band(None))
    t = _t_quantile(confidence, n) if n >= MIN_INTERVAL_ITEMS else math.nan
    k = cohen_kappa(a, b, cats, ci_level=confidence)
    constant = [who for who, calls in (("A", a), ("B", b)) if len(set(calls)) == 1]
    if k.kappa is None:
        kappa = _undefined(KAPPA, f"both raters called every item {a[0]!r}, so chance agreement is 1 and "
                                  "kappa is 0/0")
    elif constant:  # kappa is 0, as cohen_kappa (and statsmodels) say; only its interval is undefined
        kappa = Coefficient(KAPPA, k.kappa, None, None, None, True, k.note, INTERVAL_METHODS[KAPPA])
    else:
        kappa = _with_interval(KAPPA, k.kappa, k.se, _z_quantile(confidence) * k.se, n, -1.0)
        if kappa.has_interval:  # cohen_kappa's own interval, its numbers unchanged
            kappa = Coefficient(KAPPA, k.kappa, k.se, k.ci_low, k.ci_high, True, "", INTERVAL_METHODS[KAPPA])
    ac1, ac1_nvar = _ac1_parts(table)
    ac1_se = math.sqrt(ac1_nvar / n)
    pabak, pabak_nvar = _pabak_parts(table)
    pabak_se = math.sqrt(pabak_nvar / n)
    return AgreementCoefficients(
        n=n, categories=cats, observed=sum(table[i][i] for i in range(q)) / n, kappa=kappa,
        ac1=_with_interval(AC1, ac1, ac1_se, t * ac1_se, n, -1.0),
        pabak=_with_interval(PABAK, pabak, pabak_se, t * pabak_se, n, -1.0 / (q - 1)),
        prevalence=_prevalence(table, cats), confusion=confusion, confidence=confidence,
        kappa_band=landis_koch_band(kappa.value))


# ---------------------------------------------------------------- planning a sample


def expected_table(coefficient: str, expected_value: float, marginals: Sequence[float]) -> list[list[float]]:
    """The table of shares the planner assumes: both raters call category k with share ``marginals[k]`` and
    agree beyond chance by a factor lam, p_kl = (1 - lam) pi_k pi_l + lam pi_k [k == l] (the model of Donner &
    Eliasziw 1992 and Flack et al. 1988 for kappa), with lam chosen so that ``coefficient`` equals
    ``expected_value``: for kappa lam = kappa; for AC1 and PABAK lam follows from the p_o they imply.
    Raises ValueError when no such table exists (a cell would be negative)."""
    pi = [float(x) for x in marginals]
    if len(pi) < 2 or any(not x > 0 for x in pi) or abs(sum(pi) - 1) > 1e-9:
        raise ValueError(f"marginals must be at least two positive shares that sum to 1; got {list(marginals)}")
    q = len(pi)
    s2 = sum(x * x for x in pi)
    v = float(expected_value)
    if coefficient == KAPPA:
        lam = v
    else:
        if coefficient == AC1:
            p_e = sum(x * (1 - x) for x in pi) / (q - 1)
            p_o = v * (1 - p_e) + p_e
        elif coefficient == PABAK:
            p_o = (v * (q - 1) + 1) / q
        else:
            raise ValueError(f"coefficient must be one of {', '.join(COEFFICIENTS)}; got {coefficient!r}")
        lam = (p_o - s2) / (1 - s2)
    table = [[(1 - lam) * pi[k] * pi[m] + (lam * pi[k] if k == m else 0.0) for m in range(q)] for k in range(q)]
    if not lam <= 1 + _EPS or any(cell < -_EPS for r in table for cell in r):
        raise ValueError(f"no two raters with marginal shares {pi} have {COEFFICIENT_LABELS[coefficient]} "
                         f"{v}; choose a value in the coefficient's reachable range")
    return [[max(0.0, cell) for cell in r] for r in table]


def interval_width(coefficient: str, n: int, table, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The full width (hi - lo, before clipping to the coefficient's range) of ``coefficient``'s interval for
    ``n`` items whose calls fall in the shares of ``table``; kappa with the normal quantile, AC1 and PABAK
    with t on n - 1 degrees of freedom (as ``agreement_coefficients`` builds them)."""
    confidence = _check_confidence(confidence)
    if coefficient == KAPPA:
        parts = _kappa_parts(table)
        if parts is None:
            raise ValueError("kappa is undefined when chance agreement is 1 (every call in one category)")
        quantile = _z_quantile(confidence)
    elif coefficient in (AC1, PABAK):
        parts = (_ac1_parts if coefficient == AC1 else _pabak_parts)(table)
        quantile = _t_quantile(confidence, n)
    else:
        raise ValueError(f"coefficient must be one of {', '.join(COEFFICIENTS)}; got {coefficient!r}")
    return 2 * quantile * math.sqrt(parts[1] / n)


def items_for_width(width: float, coefficient: str = KAPPA, expected_value: float = 0.6,
                    marginals: Sequence[float] | None = None, prevalence: float | None = None,
                    confidence: float = DEFAULT_CONFIDENCE) -> int:
    """The fewest items (at least ``MIN_INTERVAL_ITEMS``) for which ``coefficient``'s interval is at most
    ``width`` wide (hi - lo) at ``confidence``.

    Assumed: the calls fall in the shares of ``expected_table(coefficient, expected_value, marginals)``, that
    is both raters share the marginal shares ``marginals`` (one per category, summing to 1; ``prevalence`` p
    is shorthand for two categories (p, 1 - p); neither: two equally common categories) and the coefficient
    comes out at ``expected_value``; the asymptotic variance formulas of ``agreement_coefficients`` hold at
    that n (kappa's interval with the normal quantile, AC1's and PABAK's with t on n - 1 degrees of freedom);
    the interval is not clipped to the coefficient's range.  Raises ValueError for a width outside (0, 2]
    or one that needs more than ``MAX_PLANNED_ITEMS`` items, and for an impossible table."""
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not 0 < width <= 2:
        raise ValueError(f"width must be a number in (0, 2]; got {width!r}")
    if coefficient not in COEFFICIENTS:
        raise ValueError(f"coefficient must be one of {', '.join(COEFFICIENTS)}; got {coefficient!r}")
    if prevalence is not None and marginals is not None:
        raise ValueError("give either marginals or prevalence, not both")
    if prevalence is not None:
        marginals = (float(prevalence), 1 - float(prevalence))
    table = expected_table(coefficient, expected_value, marginals or (0.5, 0.5))
    _check_confidence(confidence)

    def fits(n: int) -> bool:
        return interval_width(coefficient, n, table, confidence) <= width

    lo, hi = MIN_INTERVAL_ITEMS, MIN_INTERVAL_ITEMS
    while not fits(hi):  # widths shrink as n grows: double until one fits, then bisect
        lo = hi + 1
        hi *= 2
        if hi > MAX_PLANNED_ITEMS:
            raise ValueError(f"an interval of width {width} would need more than {MAX_PLANNED_ITEMS} items")
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi
