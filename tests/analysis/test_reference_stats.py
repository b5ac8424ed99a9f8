"""objrel's statistics against reference libraries on random inputs (scipy, statsmodels)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from scipy.stats.contingency import association

from objrel.analysis import significance as S


@pytest.mark.parametrize("seed", range(10))
def test_cramers_v_matches_scipy_association(seed):
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(2, 5)), int(rng.integers(2, 5)))
    t = rng.integers(1, 60, size=shape)
    chi2, p, dof, v = S.contingency_stats(t)
    assert v == pytest.approx(association(t, method="cramer", correction=False), rel=1e-10)
    ref = sps.chi2_contingency(t, correction=False)
    assert chi2 == pytest.approx(ref.statistic, rel=1e-10) and p == pytest.approx(ref.pvalue, rel=1e-9)
    assert dof == (shape[0] - 1) * (shape[1] - 1)
    v_y = S.contingency_stats(t, correction=True)[3]
    assert v_y == pytest.approx(association(t, method="cramer", correction=True), rel=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_contingency_from_counts_standard_and_yates_vs_scipy(seed):
    rng = np.random.default_rng(100 + seed)
    t = rng.integers(1, 200, size=(2, 2))
    c = S.contingency_from_counts(t)
    assert c.cramers_v == pytest.approx(association(t, method="cramer"), rel=1e-10)
    assert c.cramers_v_yates == pytest.approx(association(t, method="cramer", correction=True), rel=1e-10)
    assert c.cramers_v_yates <= c.cramers_v + 1e-12   # the correction only shrinks chi2
    assert c.v_method == S.CRAMERS_V_STANDARD


@pytest.mark.parametrize("seed", range(12))
def test_wilcoxon_exact_matches_scipy_when_no_zeros_or_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    x = rng.random(n)
    y = x + rng.normal(0.05, 0.1, size=n)
    for alt in ("two-sided", "greater", "less"):
        t = S.wilcoxon_signed_rank(x, y, alt)
        assert t.method == "exact" and t.n == n and t.n_zero == 0 and not t.ties
        d = np.round(x - y, S.WILCOXON_DECIMALS)
        ref = sps.wilcoxon(d, alternative=alt, method="exact")
        assert t.pvalue == pytest.approx(ref.pvalue, rel=1e-12) and t.statistic == ref.statistic
        # scipy's own default also picks the exact distribution here
        assert t.pvalue == pytest.approx(sps.wilcoxon(d, alternative=alt).pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_wilcoxon_with_zeros_or_ties_is_labelled_approx(seed):
    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(8, 60))
    d = rng.integers(-4, 6, size=n) / 10          # integer-ish steps: zeros and ties
    t = S.wilcoxon_signed_rank(d, np.zeros(n))
    n_zero = int((np.round(d, 12) == 0).sum())
    assert t.n_zero == n_zero and t.n == n - n_zero
    assert t.method == "approx" and t.ties
    assert "approx" in t.method_label and (n_zero == 0 or "zero_method=wilcox" in t.method_label)
    ref = sps.wilcoxon(d, zero_method="wilcox", method="asymptotic")
    assert t.pvalue == pytest.approx(ref.pvalue, rel=1e-12)
    assert t.to_dict()["method"] == "approx"


def test_wilcoxon_by_hand():
    # d = (+1, +2, +3, -4): W+ = 6, W- = 4; exact two-sided p = 2 P(W- <= 4) = 2 * 6/16 = 0.75
    # (subsets of {1,2,3,4} with rank sum <= 4: {}, {1}, {2}, {3}, {4}, {1,2}, {1,3} = 7 -> 7/16;
    #  min(W+, W-) = 4 -> p = 2 * 7/16 = 0.875)
    t = S.wilcoxon_signed_rank([1, 2, 3, -4], [0, 0, 0, 0])
    assert t.method == "exact" and t.statistic == 4 and t.pvalue == pytest.approx(2 * 7 / 16)
    # a zero difference is dropped and the test is labelled approx
    t = S.wilcoxon_signed_rank([1, 2, 3, -4, 0], [0] * 5)
    assert t.n == 4 and t.n_zero == 1 and t.method == "approx" and "1 zero difference" in t.method_label
    # normal approximation by hand: W+ = 6, mean n(n+1)/4 = 5, var n(n+1)(2n+1)/24 = 7.5
    z = (4 - 5) / math.sqrt(7.5)
    assert t.pvalue == pytest.approx(2 * sps.norm.cdf(z), rel=1e-9)
