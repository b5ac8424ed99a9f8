"""The significance tests behind the Explore page (EMSE21 s5.2, s6.3, s6.4): the 3- vs 15-colour chi-square
and Cramér's V (Table 4), reliable vs original accuracy with the Wilcoxon signed-rank test (Tables 7/8),
McNemar's paired test of two runs' flags, and the accuracy / violation-ratio correlation (Fig. 10).

Each reads the flag tables of ``objrel.analysis.flag_tables`` (same conventions: primary votes, correct
inferences, ``NotAvailable`` when the runs cannot answer) and returns a frozen result with ``to_dict``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from objrel.analysis.flag_tables import (MR1, MR2, PALETTE_GROUP_SUFFIX, PALETTE_PLAN_HINT, RELATION_COLUMN,
                                         TEST_ALL_HINT, NotAvailable, check_relation, inferences, relation_flags,
                                         run_figures, run_records, safe_ratio)
from objrel.store.kept import kept
from objrel.store import Store
from objrel.store import detections as D
from objrel.store import inferences as inference_rows

# Cramér's V as Cramér (1946, s21.9) defines it: from Pearson's chi-square *without* Yates'
# continuity correction, so a perfectly associated table such as [[1, 0], [0, 1]] has V = 1
# (``scipy.stats.contingency.association(t, method="cramer")``).  The headline chi2, p-value
# and V of a Contingency are these.  EMSE21 Table 4 reports V = 0.743 (MR-1) and 0.835
# (MR-2), which is what V computed from the Yates-corrected chi-square gives (scipy's
# ``chi2_contingency`` default); the standard V is 0.745 and 0.835.  That variant is offered
# next to it (``cramers_v_yates``), labelled as such.
CONTINGENCY_YATES = False
CRAMERS_V_STANDARD = "standard (Pearson chi-square, no continuity correction)"
CRAMERS_V_YATES = "Yates-corrected chi-square (as EMSE21 Table 4)"
# Wilcoxon signed-rank: the p-value is exact for at most this many non-zero differences:
# scipy's exact null distribution when no difference is zero and no two |differences| tie,
# otherwise the exact sign-flip distribution of W+ given the observed (average) ranks.  Above
# it, the normal approximation with tie-corrected variance.  Differences are rounded to this
# many decimals first, so that equal accuracy gains computed along different float paths
# count as ties.
WILCOXON_EXACT_MAX_N = 50
WILCOXON_DECIMALS = 12
WILCOXON_ZERO_METHOD = "wilcox"
WILCOXON_EXACT_TIES = "exact-ties"
# The Wilcoxon signed-rank test needs at least this many non-zero paired differences.
MIN_WILCOXON_PAIRS = 2
# EMSE21 s6.3 calls fewer than 20 models "significantly less than 20, the typical
# minimum number for a significant test"; below this the result carries a warning.
WILCOXON_ADVISED_PAIRS = 20
# Pearson correlation (Fig. 10) needs at least this many runs (with 2 points r is +-1).
MIN_CORRELATION_RUNS = 3

# ---------------------------------------------------------------- result types



def _stats():
    """scipy.stats, imported when a test is computed: a page that shows kept results needs none of it (it takes
    over a second to import)."""
    from scipy import stats

    return stats

@dataclass(frozen=True)
class SignificanceTest:
    """One statistical significance test: its statistic, p-value and the number of observations it used."""

    name: str
    statistic: float
    pvalue: float
    n: int
    alternative: str = "two-sided"
    # How the p-value was obtained: "exact" (the exact null distribution), "exact-ties" (the exact
    # sign-flip distribution given tied ranks or dropped zeros) or "approx" (normal approximation);
    # zero_method / n_zero / ties say why the plain exact distribution did not apply.
    method: str | None = None
    zero_method: str | None = None
    n_zero: int = 0
    ties: bool = False

    @property
    def method_label(self) -> str:
        """Human-readable account of how the p-value was computed."""
        if self.method is None:
            return "unspecified"
        if self.method == "exact":
            return "exact null distribution"
        if self.method == WILCOXON_EXACT_TIES:
            why = []
            if self.n_zero:
                why.append(f"{self.n_zero} zero difference(s) dropped (zero_method={self.zero_method})")
            if self.ties:
                why.append("tied differences given average ranks")
            return "exact with ties (sign-flip enumeration): " + "; ".join(why)
        why = []
        if self.n_zero:
            why.append(f"{self.n_zero} zero difference(s) dropped (zero_method={self.zero_method})")
        if self.ties:
            why.append("tied differences")
        if not why:
            why.append(f"more than {WILCOXON_EXACT_MAX_N} pairs")
        return "normal approximation (approx): " + "; ".join(why)

    def to_dict(self) -> dict:
        """The test's fields as a JSON-ready dict, with its method label."""
        return {"name": self.name, "statistic": self.statistic, "pvalue": self.pvalue, "n": self.n,
                "alternative": self.alternative, "method": self.method, "zero_method": self.zero_method,
                "n_zero": self.n_zero, "ties": self.ties, "method_label": self.method_label}


@dataclass(frozen=True)
class ReliableAccuracy:
    """EMSE21 Table 7/8 for one relation; see :func:`reliable_accuracy`."""

    relation: str
    table: pd.DataFrame
    wilcoxon: SignificanceTest | None
    note: str | None = None

    def to_dict(self) -> dict:
        """The comparison as a JSON-ready dict: its table as records and the Wilcoxon test, if any."""
        return {"relation": self.relation, "table": _records(self.table),
                "wilcoxon": self.wilcoxon.to_dict() if self.wilcoxon else None, "note": self.note}


@dataclass(frozen=True)
class Contingency:
    """EMSE21 Table 4 for one run and relation; see :func:`colour_contingency`."""

    run_id: int | None
    relation: str
    table: pd.DataFrame      # 2x2 counts: rows V15 violate / not, columns V3 violate / not
    n: int
    chi2: float | None
    pvalue: float | None
    dof: int
    cramers_v: float | None
    agreement: float | None  # share of inferences on which both votes agree
    yates: bool = CONTINGENCY_YATES   # whether chi2 / pvalue / cramers_v above are Yates-corrected (no: standard)
    note: str | None = None
    # the Yates-corrected variant (what EMSE21 Table 4 reports)
    chi2_yates: float | None = None
    pvalue_yates: float | None = None
    cramers_v_yates: float | None = None

    @property
    def v_method(self) -> str:
        """Which Cramer's V the ``cramers_v`` field holds: from the Yates-corrected chi-square or the plain one."""
        return CRAMERS_V_YATES if self.yates else CRAMERS_V_STANDARD

    def to_dict(self) -> dict:
        """The test as a JSON-ready dict: the contingency table as nested counts, both chi-squares and V methods."""
        return {"run_id": self.run_id, "relation": self.relation,
                "table": {str(r): {str(c): int(self.table.loc[r, c]) for c in self.table.columns}
                          for r in self.table.index},
                "n": self.n, "chi2": self.chi2, "pvalue": self.pvalue, "dof": self.dof,
                "cramers_v": self.cramers_v, "agreement": self.agreement, "yates": self.yates, "note": self.note,
                "v_method": self.v_method, "chi2_yates": self.chi2_yates, "pvalue_yates": self.pvalue_yates,
                "cramers_v_yates": self.cramers_v_yates, "v_yates_method": CRAMERS_V_YATES}


@dataclass(frozen=True)
class Correlation:
    """EMSE21 Fig. 10 for one relation; see :func:`accuracy_violation_correlation`."""

    relation: str
    r: float
    pvalue: float
    n: int
    slope: float       # least-squares line ratio = slope * accuracy + intercept (the figure's line)
    intercept: float
    table: pd.DataFrame

    def to_dict(self) -> dict:
        """The correlation as a JSON-ready dict, its table as records."""
        return {"relation": self.relation, "r": self.r, "pvalue": self.pvalue, "n": self.n, "slope": self.slope,
                "intercept": self.intercept, "table": _records(self.table)}


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for row in df.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in row.items()})
    return out

# ---------------------------------------------------------------- reliable accuracy (Tables 7/8)


@kept(refusals=(NotAvailable,))
def reliable_accuracy(store: Store, run_ids: Sequence[int], relation: str, alternative: str = "two-sided",
                      require_all_tested: bool = True) -> ReliableAccuracy:
    """EMSE21 s6.3 / Tables 7-8: accuracy on the unreliable and the reliable inferences, per run.

    As the paper defines it, *both correct and incorrect* inferences are examined: for each run the
    evaluated (not skipped) inferences are split into **Unreliable** (flagged for ``relation`` by the
    primary vote; for ``MR-1&2`` by both) and **Reliable** (all the others).  Then, per run:

    * ``original``            = correct / evaluated (the column "Original");
    * ``unreliable_accuracy`` = correct among Unreliable / |Unreliable| (NaN when Unreliable is empty);
    * ``reliable_accuracy``   = correct among Reliable / |Reliable| (NaN when Reliable is empty);
    * ``delta``               = reliable_accuracy - original.

    Incorrect inferences can only be flagged when the run tested them (``objrel run --all``).  In a run that
    tested only correct inferences every incorrect one would land in Reliable untested and Unreliable would
    have accuracy 100 % by construction, so by default (``require_all_tested``) such a run raises
    :class:`NotAvailable`; with ``require_all_tested=False`` they count as reliable and the table's
    ``untested`` column says how many there were.

    The Wilcoxon signed-rank test (:func:`wilcoxon_signed_rank`: paired by run, zero_method ``wilcox``,
    exact p-value, ties and zeros included, for at most ``WILCOXON_EXACT_MAX_N`` non-zero differences,
    otherwise the tie-corrected normal approximation; the result says which) compares
    ``reliable_accuracy`` with ``original`` across runs: the paper's "results before and after removing the
    unreliable inferences".  ``alternative`` is passed to scipy (``two-sided`` by default; ``greater`` tests
    reliable > original).  The paper's p = 3.81e-6 for 18 models that all gain accuracy equals 2**-18, the exact
    *one-sided* p (the two-sided one is twice that).  Runs with an empty Reliable set are left out of the test.
    The test is None (with ``note``) when fewer than ``MIN_WILCOXON_PAIRS`` runs have a non-zero difference.

    Table columns: ``run``, ``model``, ``evaluated``, ``untested``, ``correct``, ``original``,
    ``unreliable`` (int), ``unreliable_accuracy``, ``reliable`` (int), ``reliable_accuracy``, ``delta``.
    """
    check_relation(relation)
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    recs = run_records(store, run_ids, same_dataset=True, what="reliable vs unreliable accuracy")
    rows = []
    for rec in recs:
        df = inferences(store, rec.id, labels=False)
        ev = df[df["evaluated"]]
        untested = int((ev["status"] == "untested").sum())
        if require_all_tested and untested:
            raise NotAvailable(
                f"run {rec.id} ({rec.name}) did not test its {untested} incorrect inference(s); EMSE21 Tables 7/8 "
                f"split correct *and* incorrect inferences into reliable and unreliable. Re-run with {TEST_ALL_HINT}")
        flag = relation_flags(ev, relation)
        unrel, rel = ev[flag], ev[~flag]
        original = safe_ratio(int(ev["correct"].sum()), len(ev))
        rel_acc = safe_ratio(int(rel["correct"].sum()), len(rel))
        rows.append({"run": rec.id, "model": rec.model, "evaluated": len(ev), "untested": untested,
                     "correct": int(ev["correct"].sum()), "original": original, "unreliable": len(unrel),
                     "unreliable_accuracy": safe_ratio(int(unrel["correct"].sum()), len(unrel)),
                     "reliable": len(rel), "reliable_accuracy": rel_acc, "delta": rel_acc - original})
    table = pd.DataFrame(rows, columns=["run", "model", "evaluated", "untested", "correct", "original", "unreliable",
                                        "unreliable_accuracy", "reliable", "reliable_accuracy", "delta"])
    paired = table.dropna(subset=["reliable_accuracy", "original"])
    nonzero = int((paired["delta"].abs() > 0).sum())
    if nonzero < MIN_WILCOXON_PAIRS:
        note = (f"Wilcoxon test not computed: it needs at least {MIN_WILCOXON_PAIRS} runs whose reliable accuracy "
                f"differs from the original, got {nonzero}")
        return ReliableAccuracy(relation, table, None, note)
    test = wilcoxon_signed_rank(paired["reliable_accuracy"].to_numpy(float), paired["original"].to_numpy(float),
                                alternative)
    note = None
    if nonzero < WILCOXON_ADVISED_PAIRS:
        note = (f"only {nonzero} paired runs; EMSE21 s6.3 treats fewer than {WILCOXON_ADVISED_PAIRS} as too few "
                f"for a reliable significance test")
    return ReliableAccuracy(relation, table, test, note)


def wilcoxon_signed_rank(x, y, alternative: str = "two-sided") -> SignificanceTest:
    """Wilcoxon (1945) signed-rank test of the paired samples ``x`` and ``y`` (EMSE21 s6.3).

    d = x - y, rounded to ``WILCOXON_DECIMALS``.  Zero differences are dropped (zero_method ``wilcox``,
    Wilcoxon's own rule); ``n`` is the number of non-zero differences, ranked by |d| with average ranks
    for ties.  For n <= ``WILCOXON_EXACT_MAX_N`` the p-value is exact:

    * no zero and no tied |d|: ``exact``, scipy's exact null distribution of W+ (``method="exact"``);
    * otherwise ``exact-ties``: under the null each sign is + or - with probability 1/2 independently,
      whatever the ranks, so W+ given the observed ranks takes each of the 2**n sign patterns with equal
      weight.  :func:`_signed_rank_null` counts them all (by dynamic programming over the doubled
      ranks, which are integers), the distribution scipy's ``PermutationMethod`` samples.  scipy's own
      ``method="exact"`` is not exact here (it uses the untied distribution, rounding W+).

    For larger n, ``approx``: the normal approximation (scipy ``method="asymptotic"``, tie-corrected
    variance, no continuity correction).  For the two-sided test the statistic is min(W+, W-) and the
    p-value 2 min(P(W+ <= w), P(W+ >= w)), at most 1; for one-sided ones the statistic is W+.
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    d = np.round(np.asarray(x, dtype=float) - np.asarray(y, dtype=float), WILCOXON_DECIMALS)
    if d.ndim != 1 or np.isnan(d).any():
        raise ValueError("the Wilcoxon test needs two 1-D samples of the same length without NaN")
    nz = d[d != 0]
    n_zero = int(d.size - nz.size)
    if nz.size < 1:
        raise ValueError("the Wilcoxon test needs at least one non-zero difference")
    absd = np.abs(nz)
    ties = bool(np.unique(absd).size < absd.size)
    small = nz.size <= WILCOXON_EXACT_MAX_N
    if small and (ties or n_zero):
        ranks = _stats().rankdata(absd)                  # average ranks: multiples of 1/2
        w_plus = float(ranks[nz > 0].sum())
        w_minus = float(ranks[nz < 0].sum())
        pvalue = _signed_rank_pvalue(np.rint(2 * ranks).astype(int), int(round(2 * w_plus)), alternative)
        statistic = min(w_plus, w_minus) if alternative == "two-sided" else w_plus
        return SignificanceTest("wilcoxon", statistic, pvalue, int(nz.size), alternative,
                                method=WILCOXON_EXACT_TIES, zero_method=WILCOXON_ZERO_METHOD,
                                n_zero=n_zero, ties=ties)
    exact = small and not ties and n_zero == 0
    res = _stats().wilcoxon(d, zero_method=WILCOXON_ZERO_METHOD, alternative=alternative,
                       method="exact" if exact else "asymptotic")
    return SignificanceTest("wilcoxon", float(res.statistic), float(res.pvalue), int(nz.size), alternative,
                            method="exact" if exact else "approx", zero_method=WILCOXON_ZERO_METHOD,
                            n_zero=n_zero, ties=ties)


def _signed_rank_null(doubled_ranks: np.ndarray) -> np.ndarray:
    """Counts of the 2**n sign patterns by 2 W+: entry k is how many give a doubled W+ of k.

    Each rank joins W+ or not, independently (the sign-flip null of the signed-rank test); the
    counts are built one rank at a time.  Exact integers (Python ints, no overflow)."""
    counts = np.zeros(int(doubled_ranks.sum()) + 1, dtype=object)
    counts[0] = 1
    top = 0
    for r in doubled_ranks:
        r = int(r)
        counts[r:top + r + 1] = counts[r:top + r + 1] + counts[:top + 1].copy()
        top += r
    return counts


def _signed_rank_pvalue(doubled_ranks: np.ndarray, doubled_w_plus: int, alternative: str) -> float:
    """Exact p-value of the observed doubled W+ under the sign-flip null of :func:`_signed_rank_null`."""
    counts = _signed_rank_null(doubled_ranks)
    total = 2 ** len(doubled_ranks)
    le = sum(counts[:doubled_w_plus + 1]) / total                       # P(W+ <= w)
    ge = sum(counts[doubled_w_plus:]) / total                           # P(W+ >= w)
    if alternative == "less":
        return float(le)
    if alternative == "greater":
        return float(ge)
    return float(min(1.0, 2 * min(le, ge)))


# ---------------------------------------------------------------- paired comparison of two runs (McNemar)


# McNemar (1947): the exact binomial test below this many discordant pairs (b + c), else the chi-square
# approximation with Edwards' continuity correction (the usual rule of thumb: b + c >= 25).
MCNEMAR_EXACT_BELOW = 25


@dataclass(frozen=True)
class McNemar:
    """McNemar's paired test of two runs' flags on the inferences both answered correctly.

    ``both`` (a) / ``only_a`` (b) / ``only_b`` (c) / ``neither`` (d): the 2x2 table of flagged (primary vote
    of ``relation``) vs not, over the ``n`` shared samples.  Only b and c, the discordant pairs, inform the
    test.  ``method``: ``exact`` (binomial, statistic min(b, c)) or ``chi-square`` ((|b - c| - 1)^2 / (b + c),
    1 degree of freedom).
    """

    run_a: int
    run_b: int
    relation: str
    n: int
    both: int
    only_a: int
    only_b: int
    neither: int
    statistic: float
    pvalue: float
    method: str

    @property
    def discordant(self) -> int:
        """The discordant pairs b + c (flagged by one relation only)."""
        return self.only_a + self.only_b

    @property
    def method_label(self) -> str:
        """Which test gave the p-value (exact binomial or corrected chi-square) and its statistic, in words."""
        if self.method == "exact":
            return (f"exact binomial test (b + c = {self.discordant} < {MCNEMAR_EXACT_BELOW}), statistic "
                    "min(b, c)")
        return (f"chi-square with continuity correction (b + c = {self.discordant} >= {MCNEMAR_EXACT_BELOW}), "
                "(|b - c| - 1)^2 / (b + c), 1 degree of freedom")

    def table(self) -> pd.DataFrame:
        """The 2x2 table: rows run A flagged / not, columns run B flagged / not."""
        a, b = f"run {self.run_a}", f"run {self.run_b}"
        return pd.DataFrame([[self.both, self.only_a], [self.only_b, self.neither]],
                            index=[f"{a} flags", f"{a} does not"], columns=[f"{b} flags", f"{b} does not"])

    def to_dict(self) -> dict:
        """The test's fields as a dict, with the discordant count and the method label."""
        return {**asdict(self), "discordant": self.discordant, "method_label": self.method_label}


def mcnemar_test(b: int, c: int) -> tuple[float, float, str]:
    """(statistic, two-sided p-value, method) of McNemar's test from the discordant counts ``b`` and ``c``:
    ``exact`` (binomial, p = min(1, 2 P[X <= min(b, c)]), X ~ Bin(b + c, 1/2)) when b + c < MCNEMAR_EXACT_BELOW,
    else ``chi-square`` with continuity correction.  No discordant pair: statistic 0, p = 1 (exact)."""
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n < MCNEMAR_EXACT_BELOW:
        k = min(b, c)
        return float(k), float(min(1.0, 2.0 * _stats().binom.cdf(k, n, 0.5))) if n else 1.0, "exact"
    stat = (abs(b - c) - 1.0) ** 2 / n
    return float(stat), float(_stats().chi2.sf(stat, 1)), "chi-square"


@kept(refusals=(NotAvailable,))
def paired_flags(store: Store, run_a: int, run_b: int, relation: str) -> McNemar:
    """McNemar's test of whether two runs on one dataset flag (``relation``) their shared inferences
    differently: the samples with the same id that both runs answered correctly and tested."""
    check_relation(relation)
    ra, rb = run_records(store, [run_a, run_b], same_dataset=True, minimum=2, what="McNemar's test")
    col = RELATION_COLUMN[relation]
    frames = []
    for rec in (ra, rb):
        df = inferences(store, rec.id, labels=False)
        frames.append(df.loc[df["correct"] & df["tested"], ["sample_id", col]].set_index("sample_id")[col])
    shared = pd.concat(frames, axis=1, join="inner", keys=["a", "b"])
    if shared.empty:
        raise NotAvailable(f"runs {ra.id} and {rb.id} have no correctly answered, tested sample in common")
    fa, fb = shared["a"].astype(bool), shared["b"].astype(bool)
    both, only_a, only_b = int((fa & fb).sum()), int((fa & ~fb).sum()), int((~fa & fb).sum())
    stat, p, method = mcnemar_test(only_a, only_b)
    return McNemar(ra.id, rb.id, relation, int(len(shared)), both, only_a, only_b,
                   int(len(shared)) - both - only_a - only_b, stat, p, method)


# ---------------------------------------------------------------- 3 vs 15 colours (Table 4)


CONTINGENCY_ROWS = ("V15: violate", "V15: not violate")
CONTINGENCY_COLUMNS = ("V3: violate", "V3: not violate")


def contingency_stats(table, correction: bool = CONTINGENCY_YATES) -> tuple[float | None, float | None, int,
                                                                            float | None]:
    """Chi-square test of independence and Cramér's V of an r x c count table.

    Returns ``(chi2, pvalue, dof, cramers_v)`` from ``scipy.stats.chi2_contingency(table,
    correction=correction)`` and V = sqrt(chi2 / (n (min(r, c) - 1))) (Cramér 1946, s21.9).  By
    default (``correction=False``) chi2 is Pearson's, and V is the standard one (1 for a perfectly
    associated table); with ``correction=True`` scipy applies Yates' continuity correction (2x2 tables
    only), which gives the V of EMSE21 Table 4.  When a row or column sums to zero the test is
    undefined and ``(None, None, dof, None)`` is returned.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or min(t.shape) < 2:
        raise ValueError(f"a contingency table must be 2-D with at least 2 rows and columns, got shape {t.shape}")
    if (t < 0).any():
        raise ValueError("a contingency table holds counts; got a negative entry")
    dof = (t.shape[0] - 1) * (t.shape[1] - 1)
    if (t.sum(axis=0) == 0).any() or (t.sum(axis=1) == 0).any():
        return None, None, dof, None
    res = _stats().chi2_contingency(t, correction=bool(correction))
    chi2 = float(res.statistic)
    v = math.sqrt(chi2 / (t.sum() * (min(t.shape) - 1)))
    return chi2, float(res.pvalue), int(res.dof), v


def contingency_from_counts(table, relation: str = MR1, run_id: int | None = None) -> Contingency:
    """A :class:`Contingency` from a 2x2 count table laid out as EMSE21 Table 4
    (rows V15 violate / not violate, columns V3 violate / not violate)."""
    t = np.asarray(table, dtype=np.int64)
    if t.shape != (2, 2):
        raise ValueError(f"expected a 2x2 table, got shape {t.shape}")
    chi2, p, dof, v = contingency_stats(t, correction=False)
    chi2_y, p_y, _, v_y = contingency_stats(t, correction=True)
    n = int(t.sum())
    note = None if chi2 is not None else (
        "chi-square undefined: one vote flags all or none of the inferences (a row or column of the table is empty)")
    df = pd.DataFrame(t, index=list(CONTINGENCY_ROWS), columns=list(CONTINGENCY_COLUMNS))
    return Contingency(run_id, relation, df, n, chi2, p, dof, v, safe_ratio(int(t[0, 0] + t[1, 1]), n) if n else None,
                       False, note, chi2_y, p_y, v_y)


@kept(refusals=(NotAvailable,))
def colour_contingency(store: Store, run_id: int, relation: str) -> Contingency:
    """EMSE21 s5.2 / Table 4: the 3-colour vote against the 15-colour vote of one run.

    V3 is the relation's primary vote (3 colours, 2 of 3), V15 the ``"<relation> 15 colours"`` vote group
    (8 of 15) of the palette15 / all plans.  Over the run's *tested* inferences that have both votes (correct
    ones, plus incorrect ones in a ``--all`` run), the 2x2 table counts inferences by (V15, V3): rows
    V15 violate / not violate, columns V3 violate / not violate, as in the paper.  The chi-square test of
    independence uses Pearson's chi-square (``scipy.stats.chi2_contingency``, no continuity correction), and
    Cramér's V is sqrt(chi2 / (n (min(r, c) - 1))) = sqrt(chi2 / n) for 2x2: the standard V.  The
    Yates-corrected chi-square, p-value and V are given too (``*_yates``): they reproduce the paper's
    V = 0.743 / 0.835 from Table 4 (the standard V is 0.745 / 0.835).  ``relation`` is ``MR-1`` or ``MR-2``.
    Raises :class:`NotAvailable` when the run has no 15-colour group.
    """
    check_relation(relation, (MR1, MR2))
    rec = store.get_run(run_id)
    group = f"{relation} {PALETTE_GROUP_SUFFIX}"
    if group not in {g.get("name") for g in (rec.plan or {}).get("groups", [])}:
        raise NotAvailable(f"run {rec.id} ({rec.name}) has no {group!r} vote group; the 3- vs 15-colour comparison "
                           f"needs a run with the 15-colour palette: `{PALETTE_PLAN_HINT}` (or --plan all)")
    rid = int(run_id)
    votes, tested = inference_rows.relation_votes(store, rid, relation)
    if D.is_detection_run(rec):
        tested = set(D.tested_unit_ids(store, rid))  # a detection run's votes are its units'
    v3: dict[str, bool] = {}
    v15: dict[str, bool] = {}
    for sid, name, primary, flagged in votes:
        if primary:
            v3[sid] = bool(flagged)
        if name == group:
            v15[sid] = bool(flagged)
    t = np.zeros((2, 2), dtype=np.int64)
    for sid in tested & v3.keys() & v15.keys():
        t[0 if v15[sid] else 1, 0 if v3[sid] else 1] += 1
    return contingency_from_counts(t, relation, rid)


# ---------------------------------------------------------------- accuracy vs violation ratio (Fig. 10)


def accuracy_violation_correlation(store: Store, run_ids: Sequence[int], relation: str) -> Correlation:
    """EMSE21 s6.4 / Fig. 10: Pearson correlation of top-1 accuracy and violation ratio across runs.

    Per run (all on one dataset): ``accuracy`` = correct / evaluated, ``ratio`` = correct inferences flagged
    for ``relation`` by the primary vote / correct inferences (the Table 5 percentage).  Returns
    ``scipy.stats.pearsonr(accuracy, ratio)`` (r and two-sided p), the least-squares line of ratio on
    accuracy (the figure's regression line) and the table (columns ``run``, ``model``, ``accuracy``,
    ``ratio``).  Needs at least ``MIN_CORRELATION_RUNS`` = 3 runs with correct inferences and accuracies and
    ratios that are not all equal; otherwise raises :class:`NotAvailable`.
    """
    check_relation(relation)
    recs = run_records(store, run_ids, same_dataset=True, minimum=MIN_CORRELATION_RUNS,
                     what="the accuracy / violation-ratio correlation")
    rows = [run_figures(store, r) for r in recs]
    table = pd.DataFrame([{"run": r.run, "model": r.model, "accuracy": r.accuracy, "ratio": r.ratio(relation)}
                          for r in rows], columns=["run", "model", "accuracy", "ratio"])
    empty = table.loc[table["ratio"].isna(), "run"].tolist()
    if empty:
        raise NotAvailable(f"runs {empty} have no correct inference, so their violation ratio is undefined")
    for col in ("accuracy", "ratio"):
        if table[col].nunique() < 2:
            raise NotAvailable(f"every selected run has the same {col} ({table[col].iloc[0]:.4f}); "
                               f"the Pearson correlation is undefined for a constant variable")
    x, y = table["accuracy"].to_numpy(float), table["ratio"].to_numpy(float)
    res = _stats().pearsonr(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    return Correlation(relation, float(res.statistic), float(res.pvalue), len(table), float(slope),
                       float(intercept), table)
