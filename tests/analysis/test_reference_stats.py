"""objrel's statistics against reference libraries on random inputs (scipy, statsmodels)."""

from __future__ import annotations

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


@pytest.mark.parametrize("seed", range(10))
def test_wilcoxon_with_zeros_or_ties_is_exact_like_scipys_sign_flip_enumeration(seed):
    # scipy's PermutationMethod enumerates all 2**n sign flips when n_resamples >= 2**n: the reference
    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(4, 13))
    d = rng.integers(-4, 6, size=n) / 10          # integer-ish steps: zeros and ties
    d[:2] = (0.2, 0.2)                            # at least one tie and two non-zero differences
    n_zero = int((np.round(d, 12) == 0).sum())
    nz = d[d != 0]
    for alt in ("two-sided", "greater", "less"):
        t = S.wilcoxon_signed_rank(d, np.zeros(n), alt)
        ref = sps.wilcoxon(nz, alternative=alt, method=sps.PermutationMethod(n_resamples=2 ** nz.size))
        assert t.pvalue == pytest.approx(ref.pvalue, rel=1e-12) and t.statistic == ref.statistic
        assert t.n_zero == n_zero and t.n == n - n_zero and t.ties
        assert t.method == S.WILCOXON_EXACT_TIES and "exact with ties (sign-flip enumeration)" in t.method_label
        assert n_zero == 0 or "zero_method=wilcox" in t.method_label
        assert t.to_dict()["method"] == S.WILCOXON_EXACT_TIES


def test_wilcoxon_ties_by_hand_three_pairs():
    # d = (1, 1, 2): ranks 1.5, 1.5, 3; W+ = 6 and W- = 0.  The 8 sign flips give W+ =
    # 0, 1.5, 1.5, 3, 3, 4.5, 4.5, 6: P(W+ >= 6) = P(W+ <= 0) = 1/8, two-sided p = 2/8 = 0.25,
    # the smallest p any 3-pair two-sided test can reach (the uncorrected normal approximation said 0.102).
    t = S.wilcoxon_signed_rank([0.7, 0.6, 0.9], [0.6, 0.5, 0.7])
    assert t.statistic == 0 and t.pvalue == pytest.approx(0.25, abs=1e-15)
    assert t.method == S.WILCOXON_EXACT_TIES and t.ties and t.n == 3
    assert S.wilcoxon_signed_rank([1, 1, 2], [0, 0, 0], "greater").pvalue == pytest.approx(1 / 8, abs=1e-15)
    # a zero is dropped, not ranked: (0, 1, 1, 2) is the same test as (1, 1, 2)
    z = S.wilcoxon_signed_rank([0, 1, 1, 2], [0] * 4)
    assert z.n == 3 and z.n_zero == 1 and z.pvalue == pytest.approx(0.25, abs=1e-15)
    assert "1 zero difference(s) dropped" in z.method_label


def test_wilcoxon_with_ties_above_the_exact_limit_is_the_tie_corrected_normal_approximation():
    n = S.WILCOXON_EXACT_MAX_N + 20
    d = np.tile([0.1, 0.2, -0.1, 0.3, 0.0], n // 5 + 1)[:n]
    t = S.wilcoxon_signed_rank(d, np.zeros(n))
    assert t.method == "approx" and t.ties and "normal approximation" in t.method_label
    ref = sps.wilcoxon(d, zero_method="wilcox", method="asymptotic")
    assert t.pvalue == pytest.approx(ref.pvalue, rel=1e-12)


def test_wilcoxon_by_hand():
    # d = (+1, +2, +3, -4): W+ = 6, W- = 4; exact two-sided p = 2 P(W- <= 4) = 2 * 6/16 = 0.75
    # (subsets of {1,2,3,4} with rank sum <= 4: {}, {1}, {2}, {3}, {4}, {1,2}, {1,3} = 7 -> 7/16;
    #  min(W+, W-) = 4 -> p = 2 * 7/16 = 0.875)
    t = S.wilcoxon_signed_rank([1, 2, 3, -4], [0, 0, 0, 0])
    assert t.method == "exact" and t.statistic == 4 and t.pvalue == pytest.approx(2 * 7 / 16)
    # a zero difference is dropped; the p-value stays the exact one of the four others
    t = S.wilcoxon_signed_rank([1, 2, 3, -4, 0], [0] * 5)
    assert t.n == 4 and t.n_zero == 1 and t.method == S.WILCOXON_EXACT_TIES and "1 zero difference" in t.method_label
    assert t.statistic == 4 and t.pvalue == pytest.approx(2 * 7 / 16)
