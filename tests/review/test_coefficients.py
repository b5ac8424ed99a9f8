"""Kappa, Gwet's AC1 and PABAK against the reference implementation (irrCAC) and a case from the literature,
and the sample-size planner against the interval it plans for."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from irrCAC.table import CAC
from statsmodels.stats.inter_rater import cohens_kappa

from objrel.review.coefficients import (AC1, KAPPA, PABAK, agreement_coefficients, expected_table, interval_width,
                                        items_for_width)
from objrel.review.judgments import VERDICTS

TOL = 1e-9
# irrCAC rounds every number to ``digits`` decimals; 15 leaves them exact to about 1e-15.
IRR_DIGITS = 15
N_TABLES = 60


def _calls(table: np.ndarray, cats) -> tuple[list[str], list[str]]:
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [cats[i]] * int(count)
            b += [cats[j]] * int(count)
    return a, b


def _irr(table: np.ndarray, confidence: float) -> tuple[dict, dict, dict]:
    cac = CAC(pd.DataFrame(table), confidence_level=confidence, digits=IRR_DIGITS)
    return cac.cohen()["est"], cac.gwet()["est"], cac.bp()["est"]


def _scalar(x) -> float:
    return float(np.asarray(x).reshape(-1)[0])


def _random_tables():
    rng = np.random.default_rng(20260521)
    out = []
    while len(out) < N_TABLES:
        q = int(rng.integers(2, 5))
        n = int(rng.integers(8, 120))
        # a skewed, agreeing table: diagonal weighted up, one category often dominant
        weights = rng.dirichlet(np.ones(q * q) * 0.7).reshape(q, q) + np.eye(q) * rng.uniform(0, 2)
        table = rng.multinomial(n, (weights / weights.sum()).ravel()).reshape(q, q)
        p_o = np.trace(table) / n
        rows, cols = table.sum(1), table.sum(0)
        # degenerate tables (a constant rater, perfect or no agreement) are tested on their own below
        if 0 < p_o < 1 and (rows > 0).sum() > 1 and (cols > 0).sum() > 1:
            out.append(table)
    return out


@pytest.mark.parametrize("confidence", [0.95, 0.90])
def test_values_and_intervals_equal_irrcac_on_random_tables(confidence):
    cats_all = ("c0", "c1", "c2", "c3")
    for table in _random_tables():
        q = table.shape[0]
        cats = cats_all[:q]
        a, b = _calls(table, cats)
        got = agreement_coefficients(a, b, categories=cats, confidence=confidence)
        kappa_ref, ac1_ref, bp_ref = _irr(table, confidence)
        n = int(table.sum())
        assert got.n == n and got.observed == pytest.approx(np.trace(table) / n, abs=TOL)
        # AC1 and PABAK: the same value, standard error and interval (t on n - 1 df; irrCAC caps the top at 1,
        # objrel also caps the bottom at the coefficient's least value, which irrCAC leaves open)
        for coef, ref, floor in ((got.ac1, ac1_ref, -1.0), (got.pabak, bp_ref, -1.0 / (q - 1))):
            assert coef.defined and coef.has_interval, (table, coef)
            assert coef.value == pytest.approx(_scalar(ref["coefficient_value"]), abs=TOL)
            assert coef.se == pytest.approx(_scalar(ref["se"]), abs=TOL)
            lo, hi = (_scalar(x) for x in ref["confidence_interval"])
            assert coef.lo == pytest.approx(max(floor, lo), abs=TOL)
            assert coef.hi == pytest.approx(hi, abs=TOL)
        # kappa: the same value and standard error (irrCAC's Gwet-Handbook formula is Fleiss-Cohen-Everitt's);
        # objrel's interval uses the normal quantile (statsmodels' convention), irrCAC's Student's t
        assert got.kappa.value == pytest.approx(_scalar(kappa_ref["coefficient_value"]), abs=TOL)
        assert got.kappa.se == pytest.approx(_scalar(kappa_ref["se"]), abs=TOL)
        sm = cohens_kappa(table)
        assert got.kappa.se == pytest.approx(sm.std_kappa, abs=TOL)
        z = 1.959963984540054 if confidence == 0.95 else 1.6448536269514722
        assert got.kappa.lo == pytest.approx(max(-1, got.kappa.value - z * got.kappa.se), abs=TOL)
        assert got.kappa.hi == pytest.approx(min(1, got.kappa.value + z * got.kappa.se), abs=TOL)


def test_feinstein_cicchetti_high_agreement_low_kappa_by_hand():
    # Feinstein & Cicchetti (1990, J Clin Epidemiol 43(6):543, the "first paradox"): 100 items, both raters
    # "yes" 80, A yes / B no 10, A no / B yes 5, both "no" 5.  p_o = 85/100 = 0.85.
    # kappa: p_e = 0.90*0.85 + 0.10*0.15 = 0.78, kappa = (0.85 - 0.78) / 0.22 = 0.3182 (the paper's 0.32).
    # PABAK (Byrt et al. 1993): 2 p_o - 1 = 0.70; se = 2 sqrt(0.85 * 0.15 / 100) = 0.0714143.
    # Prevalence index (Byrt): |80 - 5| / 100 = 0.75; bias index |10 - 5| / 100 = 0.05; Byrt's identity
    # kappa = (PABAK - PI^2 + BI^2) / (1 - PI^2 + BI^2) = (0.70 - 0.5625 + 0.0025) / 0.44 = 0.3182.
    # AC1 (Gwet 2008): pi_yes = (0.90 + 0.85) / 2 = 0.875, pi_no = 0.125; p_e = 2 * 0.875 * 0.125 = 0.21875;
    # AC1 = (0.85 - 0.21875) / 0.78125 = 0.808.  Variance (Handbook eq. 4.2.4), with 2 (1 - AC1) = 0.384:
    # term_yy = 1 - 0.384 (1 - 0.875) = 0.952, term_yn = term_ny = -0.384 * 0.5 = -0.192,
    # term_nn = 1 - 0.384 (1 - 0.125) = 0.664; sum1 = 0.80*0.952^2 + 0.15*0.192^2 + 0.05*0.664^2 = 0.7526176;
    # (p_o - 2 (1 - AC1) p_e)^2 = (0.85 - 0.084)^2 = 0.586756; n Var = (0.7526176 - 0.586756) / 0.78125^2
    # = 0.27174764544; se = sqrt(0.27174764544 / 100) = 0.0521294.
    a = ["tp"] * 80 + ["tp"] * 10 + ["fp"] * 5 + ["fp"] * 5
    b = ["tp"] * 80 + ["fp"] * 10 + ["tp"] * 5 + ["fp"] * 5
    got = agreement_coefficients(a, b, categories=("tp", "fp"))
    assert got.observed == pytest.approx(0.85)
    assert got.kappa.value == pytest.approx(0.07 / 0.22, abs=TOL)
    assert got.pabak.value == pytest.approx(0.70, abs=TOL)
    assert got.pabak.se == pytest.approx(2 * math.sqrt(0.85 * 0.15 / 100), abs=TOL)
    assert got.ac1.value == pytest.approx(0.808, abs=TOL)
    assert got.ac1.se == pytest.approx(math.sqrt(0.27174764544 / 100), abs=TOL)
    assert got.prevalence.index == pytest.approx(0.75) and got.prevalence.bias_index == pytest.approx(0.05)
    assert got.prevalence.index_categories == ("tp", "fp")
    pi, bi = got.prevalence.index, got.prevalence.bias_index
    assert got.kappa.value == pytest.approx((got.pabak.value - pi ** 2 + bi ** 2) / (1 - pi ** 2 + bi ** 2), abs=TOL)
    assert got.prevalence.dominant == "tp" and got.prevalence.dominant_share == pytest.approx(0.875)
    shares = {s.category: (s.share_a, s.share_b) for s in got.prevalence.shares}
    assert shares == {"tp": pytest.approx((0.90, 0.85)), "fp": pytest.approx((0.10, 0.15))}
    # t on 99 degrees of freedom: 1.9842169515086827
    t = 1.9842169515086827
    assert got.ac1.lo == pytest.approx(0.808 - t * got.ac1.se, abs=TOL)
    assert got.ac1.hi == pytest.approx(min(1.0, 0.808 + t * got.ac1.se), abs=TOL)


def test_a_constant_rater_leaves_kappas_interval_undefined_not_zero_width():
    a = ["tp"] * 12
    b = ["tp"] * 9 + ["fp"] * 3
    sm = cohens_kappa(np.array([[9, 3], [0, 0]]))
    assert sm.std_kappa == 0.0  # statsmodels: kappa 0, se 0 (and a NaN z); objrel: kappa 0, interval undefined
    got = agreement_coefficients(a, b, categories=("tp", "fp"))
    assert got.kappa.defined and got.kappa.value == sm.kappa == 0.0
    assert got.kappa.se is None and got.kappa.lo is None and got.kappa.hi is None
    assert "interval undefined" in got.kappa.note and "one reviewer called every item true positive" in got.kappa.note
    # AC1 and PABAK stay defined there, with a real interval
    assert got.ac1.defined and got.ac1.has_interval and got.ac1.hi > got.ac1.lo
    assert got.pabak.defined and got.pabak.has_interval and got.pabak.hi > got.pabak.lo


@pytest.mark.parametrize("b, table", [
    (["tp", "tp", "fp"], [[2, 1], [0, 0]]),                  # 3 items: statsmodels' se is NaN
    (["tp"] * 9 + ["fp"] * 3, [[9, 3], [0, 0]]),             # 12 items: statsmodels' se is 0.0
])
def test_cohen_kappa_with_a_constant_rater_has_no_standard_error_nor_interval(b, table):
    """Rater A calls every item tp: kappa is 0 whatever B does, and the Fleiss-Cohen-Everitt variance is 0 in
    exact arithmetic.  statsmodels' cohens_kappa returns its floating-point remainder (|var| < 1e-15), whose
    square root is NaN when the remainder is negative: no usable standard error either way.  objrel leaves
    se and the interval undefined (None) with the reason, never a [0, 0] interval."""
    from objrel.app.captions import kappa_interval
    from objrel.review.coefficients import cohen_kappa

    a = ["tp"] * len(b)
    with np.errstate(invalid="ignore"):
        sm = cohens_kappa(np.array(table))
    assert abs(sm.var_kappa) < 1e-15 and not sm.std_kappa > 1e-6
    if len(b) == 3:
        assert math.isnan(sm.std_kappa) and math.isnan(sm.kappa_low) and math.isnan(sm.kappa_upp)
    k = cohen_kappa(a, b, categories=("tp", "fp"))
    assert k.kappa == pytest.approx(sm.kappa) and k.kappa == 0.0
    assert (k.se, k.ci_low, k.ci_high) == (None, None, None)
    assert "interval undefined" in k.note and "one reviewer called every item true positive" in k.note
    assert kappa_interval(k) == "undefined"
    assert k.to_dict()["se"] is None
    # a kappa with a standard error keeps its interval, shown as [lo, hi]
    k2 = cohen_kappa(["tp"] * 6 + ["fp"] * 4, ["tp"] * 5 + ["fp"] * 4 + ["tp"], categories=("tp", "fp"))
    assert k2.note == "" and kappa_interval(k2) == "[0.069, 1.000]"


def test_coefficient_table_says_undefined_for_a_missing_interval():
    from objrel.app.captions import coefficient_frame

    got = coefficient_frame(agreement_coefficients(["tp"] * 3, ["tp", "tp", "fp"], categories=("tp", "fp")))
    row = got.set_index("coefficient").loc["Cohen's kappa"]
    # kappa itself is 0 (as the page's headline and statsmodels say); only its interval is undefined
    assert row["value"] == "0.000" and row["95% interval"] == "undefined"
    assert "one reviewer called every item true positive" in row["note"] and "'tp'" not in row["note"]


def test_both_raters_constant_and_perfect_agreement():
    got = agreement_coefficients(["tp"] * 7, ["tp"] * 7)
    assert not got.kappa.defined and "0/0" in got.kappa.note
    # AC1 = 1 and PABAK = 1 with se 0: the value stays, no zero-width interval
    for coef in (got.ac1, got.pabak):
        assert coef.defined and coef.value == pytest.approx(1.0) and coef.se == 0.0
        assert not coef.has_interval and "standard error is 0" in coef.note
    got = agreement_coefficients(["tp", "fp", "tp", "fp"], ["tp", "fp", "tp", "fp"])
    assert got.kappa.defined and got.kappa.value == pytest.approx(1.0) and not got.kappa.has_interval


def test_no_items_and_bad_input():
    got = agreement_coefficients([], [])
    assert got.n == 0 and got.observed is None
    assert all(not c.defined for c in got.coefficients)
    with pytest.raises(ValueError, match="same items"):
        agreement_coefficients(["tp"], [])
    with pytest.raises(ValueError, match="outside the categories"):
        agreement_coefficients(["tp"], ["maybe"])
    with pytest.raises(ValueError, match="confidence"):
        agreement_coefficients(["tp"], ["tp"], confidence=1.0)


def test_three_verdicts_are_the_default_scale():
    # 'uncertain' counts in q whether used or not: PABAK = (3 p_o - 1) / 2
    got = agreement_coefficients(["tp", "fp", "tp", "tp"], ["tp", "fp", "fp", "tp"])
    assert got.categories == VERDICTS
    assert got.pabak.value == pytest.approx((3 * 0.75 - 1) / 2)


@pytest.mark.parametrize("coefficient,value,marginals", [
    (KAPPA, 0.6, (0.5, 0.5)), (KAPPA, 0.4, (0.85, 0.15)), (AC1, 0.7, (0.8, 0.2)), (AC1, 0.5, (0.6, 0.3, 0.1)),
    (PABAK, 0.6, (0.5, 0.5)), (PABAK, 0.8, (0.7, 0.2, 0.1)),
])
@pytest.mark.parametrize("width", [0.2, 0.35])
def test_planner_returns_the_fewest_items_that_reach_the_width(coefficient, value, marginals, width):
    n = items_for_width(width, coefficient, value, marginals=marginals)
    table = expected_table(coefficient, value, marginals)
    assert interval_width(coefficient, n, table) <= width
    assert interval_width(coefficient, n - 1, table) > width


def test_planner_uses_the_intervals_agreement_coefficients_reports():
    # kappa 0.6 with two equally common categories: p_kk = 0.25 * 0.4 + 0.6 * 0.5 = 0.4, p_kl = 0.1; at n = 50
    # that is the integer table [[20, 5], [5, 20]]
    table = expected_table(KAPPA, 0.6, (0.5, 0.5))
    assert table == [[pytest.approx(0.4), pytest.approx(0.1)], [pytest.approx(0.1), pytest.approx(0.4)]]
    a, b = _calls(np.array([[20, 5], [5, 20]]), ("tp", "fp"))
    got = agreement_coefficients(a, b, categories=("tp", "fp"))
    assert got.kappa.value == pytest.approx(0.6)
    assert got.kappa.hi - got.kappa.lo == pytest.approx(interval_width(KAPPA, 50, table), abs=TOL)
    for name, coef in ((AC1, got.ac1), (PABAK, got.pabak)):
        t = expected_table(name, coef.value, (0.5, 0.5))
        assert coef.hi - coef.lo == pytest.approx(interval_width(name, 50, t), abs=TOL)
    # the prevalence shorthand is two categories
    assert items_for_width(0.3, KAPPA, 0.5, prevalence=0.8) == items_for_width(0.3, KAPPA, 0.5, marginals=(0.8, 0.2))


def test_planner_refuses_what_cannot_be():
    with pytest.raises(ValueError, match="width"):
        items_for_width(0.0)
    with pytest.raises(ValueError, match="coefficient"):
        items_for_width(0.2, "alpha")
    with pytest.raises(ValueError, match="reachable"):
        items_for_width(0.2, KAPPA, -0.9, marginals=(0.9, 0.1))
    with pytest.raises(ValueError, match="marginals"):
        items_for_width(0.2, KAPPA, 0.5, marginals=(0.5, 0.6))
