"""McNemar's paired test of two runs (objrel.analysis.significance.mcnemar_test / paired_flags): a hand case,
statsmodels on random tables, and the 2x2 table read from a store."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from objrel.analysis import flag_tables as A
from objrel.analysis import significance as S

from tests.analysis.test_analysis import Inf, add_run


def test_hand_cases():
    # b = 1, c = 9: exact; P[X <= 1], X ~ Bin(10, 1/2) = 11 / 1024, two-sided 22 / 1024
    stat, p, method = S.mcnemar_test(1, 9)
    assert (stat, method) == (1.0, "exact") and p == pytest.approx(22 / 1024)
    # b = 5, c = 25: chi-square with continuity correction (|5 - 25| - 1)^2 / 30 = 361 / 30
    stat, p, method = S.mcnemar_test(5, 25)
    assert method == "chi-square" and stat == pytest.approx(361 / 30)
    assert p == pytest.approx(0.000523, abs=5e-6)      # chi2(1).sf(12.0333)
    assert S.mcnemar_test(0, 0) == (0.0, 1.0, "exact")
    # the boundary: b + c = 24 is exact, 25 is chi-square ((|12 - 13| - 1)^2 / 25 = 0, p = 1)
    assert S.mcnemar_test(12, 12) == (12.0, 1.0, "exact")
    assert S.mcnemar_test(12, 13) == (0.0, 1.0, "chi-square")
    with pytest.raises(ValueError):
        S.mcnemar_test(-1, 3)


def test_agrees_with_statsmodels_on_random_tables():
    rng = np.random.default_rng(7)
    for _ in range(200):
        a, b, c, d = (int(v) for v in rng.integers(0, 40, size=4))
        stat, p, method = S.mcnemar_test(b, c)
        exact = b + c < S.MCNEMAR_EXACT_BELOW
        ref = sm_mcnemar([[a, b], [c, d]], exact=exact, correction=True)
        assert method == ("exact" if exact else "chi-square")
        assert stat == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)


def test_paired_flags_counts_the_shared_correct_inferences(store):
    # shared correct+tested samples: s1..s5 and s7 (s6 is wrong in run B, x only in A, y only in B)
    ra = add_run(store, [Inf("s1", mr2=True), Inf("s2", mr2=True), Inf("s3", mr2=True), Inf("s4"), Inf("s5"),
                         Inf("s6", mr2=True), Inf("s7", mr2=True), Inf("x", mr2=True)], model="A", test_all=False)
    rb = add_run(store, [Inf("s1", mr2=True), Inf("s2"), Inf("s3"), Inf("s4", mr2=True), Inf("s5"),
                         Inf("s6", correct=False), Inf("s7"), Inf("y", mr2=True)], model="B", test_all=False)
    res = S.paired_flags(store, ra, rb, "MR-2")
    assert (res.n, res.both, res.only_a, res.only_b, res.neither) == (6, 1, 3, 1, 1)
    assert res.method == "exact" and res.statistic == 1.0 and res.pvalue == pytest.approx(2 * 5 / 16)
    assert "exact binomial" in res.method_label and "b + c = 4 < 25" in res.method_label
    assert res.table().values.tolist() == [[1, 3], [1, 1]]
    assert S.paired_flags(store, rb, ra, "MR-2").only_a == 1          # the table turns with the runs


def test_paired_flags_needs_one_dataset_and_shared_samples(store):
    ra = add_run(store, [Inf("a", mr1=True)], dataset="one")
    rb = add_run(store, [Inf("b", mr1=True)], dataset="two")
    rc = add_run(store, [Inf("c", mr1=True)], dataset="one")
    with pytest.raises(A.NotAvailable, match="datasets"):
        S.paired_flags(store, ra, rb, "MR-1")
    with pytest.raises(A.NotAvailable, match="in common"):
        S.paired_flags(store, ra, rc, "MR-1")
