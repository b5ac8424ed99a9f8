"""Agreement of k raters (objrel.review.many_raters): Fleiss' kappa and Krippendorff's alpha against statsmodels,
the ``krippendorff`` package and irrCAC on random tables, worked cases from the sources, per-label rows, the
seeded bootstrap; and the view over a real store's drawn items (three reviewers), blind until the sample closes."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import krippendorff
import numpy as np
import pandas as pd
import pytest
from irrCAC.raw import CAC
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from objrel import review as R
from objrel.access import SERVER
from objrel.errors import NotAllowed
from objrel.review import accounts
from objrel.review.agreement import many_rater_view, rater_table
from objrel.review.coefficients import agreement_coefficients
from objrel.review.many_raters import (ALPHA, FLEISS, category_counts, fleiss_kappa, krippendorff_alpha,
                                       many_rater_agreement)
from objrel.review.roles import actor_of
from objrel.store import Store
from tests.review.test_review import make_run

CATS = ("tp", "fp", "uncertain")
TABLES = 200
TOLERANCE = 1e-12
# irrCAC rounds every number to ``digits`` decimals; 15 leaves them exact to about 1e-15.
DIGITS = 15


def random_ratings(rng, missing: float):
    """Items x raters calls (3 to 40 items, 2 to 7 raters, skewed category shares), a share ``missing`` of the
    cells None; returns (the calls as strings, the same as floats with NaN for None)."""
    n, k = int(rng.integers(3, 41)), int(rng.integers(2, 8))
    codes = rng.choice(len(CATS), size=(n, k), p=rng.dirichlet(np.ones(len(CATS)))).astype(float)
    codes[rng.random(codes.shape) < missing] = np.nan
    calls = [[None if math.isnan(v) else CATS[int(v)] for v in row] for row in codes]
    return calls, codes


def test_fleiss_kappa_equals_statsmodels_on_200_random_complete_tables():
    rng = np.random.default_rng(20260128)
    worst, compared = 0.0, 0
    for _ in range(TABLES):
        calls, codes = random_ratings(rng, missing=0.0)
        ours = many_rater_agreement(calls, [f"r{i}" for i in range(codes.shape[1])], CATS).fleiss
        counts, _ = aggregate_raters(codes.astype(int), n_cat=len(CATS))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # statsmodels divides 0/0 when one category is used
            ref = statsmodels_fleiss(counts)
        if math.isnan(ref):
            assert ours.value is None and "one category" in ours.note
            continue
        worst, compared = max(worst, abs(ours.value - ref)), compared + 1
    print(f"Fleiss' kappa vs statsmodels.stats.inter_rater.fleiss_kappa: {compared} of {TABLES} tables defined, "
          f"max |difference| = {worst:.3e}")
    assert compared >= TABLES * 0.9
    assert worst <= TOLERANCE


def test_krippendorff_alpha_equals_the_krippendorff_package_on_200_random_tables_with_missing_calls():
    rng = np.random.default_rng(43)
    worst, compared = 0.0, 0
    for _ in range(TABLES):
        calls, codes = random_ratings(rng, missing=0.3)
        ours = many_rater_agreement(calls, [f"r{i}" for i in range(codes.shape[1])], CATS).alpha
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ref = float(krippendorff.alpha(reliability_data=codes.T, level_of_measurement="nominal",
                                               value_domain=[0.0, 1.0, 2.0]))
        except ValueError:   # the package refuses data with no pairable value or a single one
            ref = math.nan
        if math.isnan(ref):
            assert ours.value is None
            continue
        worst, compared = max(worst, abs(ours.value - ref)), compared + 1
    print(f"Krippendorff's alpha vs krippendorff.alpha(nominal): {compared} of {TABLES} tables defined, "
          f"max |difference| = {worst:.3e}")
    assert compared >= TABLES * 0.9
    assert worst <= TOLERANCE


def test_fleiss_kappa_and_its_standard_error_equal_irrcac_with_skipped_calls():
    """With items some raters skipped, Fleiss' kappa is Gwet's generalisation; value, standard error and interval
    equal irrCAC's ``fleiss`` (t on n - 1 degrees of freedom; irrCAC leaves the bottom unclipped)."""
    rng = np.random.default_rng(7)
    worst_value = worst_se = worst_bound = 0.0
    compared = 0
    for _ in range(TABLES):
        calls, codes = random_ratings(rng, missing=0.3)
        ours = many_rater_agreement(calls, [f"r{i}" for i in range(codes.shape[1])], CATS).fleiss
        frame = pd.DataFrame(codes).dropna(how="all")
        if ours.value is None or not ours.has_interval or len(frame) < 2:
            continue
        est = CAC(frame, digits=DIGITS).fleiss()["est"]
        lo, hi = est["confidence_interval"]
        worst_value = max(worst_value, abs(est["coefficient_value"] - ours.value))
        worst_se = max(worst_se, abs(est["se"] - ours.se))
        worst_bound = max(worst_bound, abs(max(-1.0, lo) - ours.lo), abs(hi - ours.hi))
        compared += 1
    print(f"Fleiss' kappa vs irrCAC on {compared} tables: max |difference| value {worst_value:.3e}, "
          f"se {worst_se:.3e}, bounds {worst_bound:.3e}")
    assert compared >= TABLES * 0.8
    assert max(worst_value, worst_se, worst_bound) <= 1e-9


def test_per_label_coefficients_are_the_coefficients_of_the_label_against_any_other_call():
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(50):
        calls, codes = random_ratings(rng, missing=0.0)
        result = many_rater_agreement(calls, [f"r{i}" for i in range(codes.shape[1])], CATS)
        for j, cat in enumerate(CATS):
            binary = (codes == j).astype(int)
            counts, _ = aggregate_raters(binary, n_cat=2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ref = statsmodels_fleiss(counts)
            row = result.label(cat)
            if math.isnan(ref):
                assert row.fleiss.value is None
            else:
                worst = max(worst, abs(row.fleiss.value - ref))
    print(f"per-label Fleiss' kappa vs statsmodels on the recoded tables: max |difference| = {worst:.3e}")
    assert worst <= TOLERANCE


def test_fleiss_1971_worked_example_of_ten_items_fourteen_raters():
    """The table of 10 items, 14 raters and 5 categories worked through in Fleiss' kappa's usual presentation
    (Wikipedia, "Fleiss' kappa", after Fleiss 1971): P = 0.378, P_e = 0.213, kappa = 0.210."""
    counts = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
              [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    k = fleiss_kappa(counts)
    assert round(k.observed, 3) == 0.378 and round(k.expected, 3) == 0.213 and round(k.value, 3) == 0.210
    assert k.lo < k.value < k.hi and k.n_items == 10


def test_krippendorff_2011_nominal_example_with_missing_values():
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal data, 4 observers, 12 units,
    missing values: n = 40 pairable values, sum o_cc = 32, sum n_c^2 = 384, alpha = 1 - 39 * 8 / 1216 = 0.743."""
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    rows = [[None if v is None else str(v) for v in unit] for unit in zip(a, b, c, d)]
    alpha = many_rater_agreement(rows, ["A", "B", "C", "D"], categories=tuple("12345")).alpha
    assert alpha.n_items == 11          # unit 12 has a single value: not pairable
    assert alpha.value == pytest.approx(float(1 - Fraction(39 * 8, 1600 - 384)), abs=1e-15)
    assert round(alpha.value, 3) == 0.743


def test_three_raters_two_items_by_hand():
    """Items (tp, tp, tp) and (tp, tp, fp): P = (1 + 1/3) / 2 = 2/3, p_tp = 5/6, P_e = 25/36 + 1/36 = 13/18,
    kappa = (12/18 - 13/18) / (5/18) = -0.2; alpha: n = 6, sum o_cc = 3 + 1 = 4, sum n_c^2 = 26,
    alpha = 1 - 5 * 2 / (36 - 26) = 0."""
    result = many_rater_agreement([["tp", "tp", "tp"], ["tp", "tp", "fp"]], ["a", "b", "c"], ("tp", "fp"))
    assert result.fleiss.value == pytest.approx(-0.2, abs=1e-15)
    assert result.alpha.value == pytest.approx(0.0, abs=1e-15)
    assert result.n_items == 2 and result.calls == 6
    assert result.label("fp").disputed == 1 and result.label("tp").disputed == 1


def test_the_label_reviewers_disagree_on_stands_out_in_the_per_label_rows():
    """Three reviewers agree on every tp and fp but split on the one item each of them called uncertain."""
    rows = [["tp"] * 3] * 4 + [["fp"] * 3] * 3 + [["uncertain", "tp", "tp"], ["fp", "uncertain", "fp"],
                                                  ["tp", "tp", "uncertain"]]
    result = many_rater_agreement(rows, ["alice", "bob", "dave"], CATS)
    uncertain, tp = result.label("uncertain"), result.label("tp")
    assert (uncertain.calls, uncertain.used_on, uncertain.disputed) == (3, 3, 3)
    assert uncertain.fleiss.value < 0 < tp.fleiss.value
    assert uncertain.alpha.value < tp.alpha.value
    assert uncertain.share == pytest.approx(3 / 30)
    assert [(p.rater_a, p.rater_b) for p in result.pairs] == [("alice", "bob"), ("alice", "dave"), ("bob", "dave")]
    pair = result.pairs[0].coefficients
    same = agreement_coefficients([r[0] for r in rows], [r[1] for r in rows], CATS)
    assert pair.kappa.value == same.kappa.value and pair.n == 10


def test_alpha_bootstrap_is_seeded_and_brackets_the_value():
    rows = [["tp", "tp", "fp"], ["tp", "tp", "tp"], ["fp", "fp", "fp"], ["tp", "fp", "fp"], ["tp", "tp", "tp"],
            ["fp", "fp", "uncertain"], ["tp", "tp", "tp"], ["fp", "fp", "fp"]]
    counts = category_counts(rows, CATS)
    first, again, other = (krippendorff_alpha(counts, seed=s) for s in (5, 5, 6))
    assert (first.lo, first.hi) == (again.lo, again.hi)
    assert (first.lo, first.hi) != (other.lo, other.hi)
    assert first.lo < first.value < first.hi and first.name == ALPHA and "seed 5" in first.method


def test_undefined_coefficients_say_why_and_no_interval_is_zero_width():
    same = many_rater_agreement([["tp", "tp"], ["tp", "tp"]], ["a", "b"], CATS)
    assert same.fleiss.value is None and same.alpha.value is None and "one category" in same.fleiss.note
    single = many_rater_agreement([["tp", "fp", None]], ["a", "b", "c"], CATS)
    assert single.fleiss.defined and not single.fleiss.has_interval and "at least 2 items" in single.fleiss.note
    perfect = many_rater_agreement([["tp"] * 3, ["fp"] * 3, ["tp"] * 3], ["a", "b", "c"], CATS)
    assert perfect.fleiss.value == pytest.approx(1.0) and not perfect.fleiss.has_interval
    nobody = many_rater_agreement([[None, None]], ["a", "b"], CATS)
    assert nobody.n_items == 0 and nobody.fleiss.name == FLEISS and "no item has two calls" in nobody.fleiss.note
    with pytest.raises(ValueError, match="outside the categories"):
        many_rater_agreement([["tp", "maybe"]], ["a", "b"], CATS)
    with pytest.raises(ValueError, match="expected one per rater"):
        many_rater_agreement([["tp"]], ["a", "b"], CATS)


# ---------------------------------------------------------------- the view over a store's drawn items

ITEMS = [f"k{i:02d}" for i in range(8)]
REL = "MR-1"
# alice, bob, dave's verdicts per item: they split on k05 to k07.
CALLS = {sid: ("tp", "tp", "tp") if i < 3 else ("fp", "fp", "fp") if i < 5 else
         (("uncertain", "tp", "tp"), ("fp", "uncertain", "fp"), ("tp", "fp", "tp"))[i - 5]
         for i, sid in enumerate(ITEMS)}


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def team(tmp_path):
    store = Store(tmp_path / "many.db")
    for name, roles in (("alice", [R.REVIEWER]), ("bob", [R.REVIEWER]), ("dave", [R.REVIEWER]),
                        ("carol", [R.ADJUDICATOR]), ("erin", [R.REVIEWER, R.ADJUDICATOR])):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    rid = make_run(store, mr1=ITEMS)
    assert len(R.draw_review_sample(SERVER, store, rid, REL)) == len(ITEMS)
    return store, rid, {n: actor_of(store, n) for n in ("alice", "bob", "dave", "carol", "erin")}


def _judge(store, rid, who, names, items=ITEMS):
    for sid in items:
        for name in names:
            verdict = CALLS[sid][("alice", "bob", "dave").index(name)]
            R.record_judgment(who[name], store, rid, sid, REL, verdict,
                              ["multiple-objects"] if verdict == "fp" else ())


def test_the_view_of_three_reviewers_is_their_drawn_calls_and_stays_blind_while_the_sample_is_open(team):
    store, rid, who = team
    _judge(store, rid, who, ("alice",))
    _judge(store, rid, who, ("bob", "dave"), ITEMS[:4])
    # open: a reviewer, and an adjudicator who also holds the reviewer role (she may still judge), see nothing
    for name in ("alice", "erin"):
        with pytest.raises(NotAllowed):
            many_rater_view(who[name], store, rid, REL)
    _judge(store, rid, who, ("bob", "dave"), ITEMS[4:])
    assert R.sample_state(store, rid, REL).closed
    view = many_rater_view(who["carol"], store, rid, REL)
    table = rater_table(store, rid, REL)
    assert view.table == table and table.reviewers == ("alice", "bob", "dave")
    assert sorted(table.items) == ITEMS        # in draw order
    assert table.calls == tuple(CALLS[s] for s in table.items)
    expected = many_rater_agreement([CALLS[s] for s in table.items], ["alice", "bob", "dave"], CATS)
    assert view.agreement.fleiss == expected.fleiss and view.agreement.alpha == expected.alpha
    assert view.agreement.label("uncertain").disputed == 2 and len(view.agreement.pairs) == 3
    assert many_rater_view(who["erin"], store, rid, REL).agreement == view.agreement
    with pytest.raises(NotAllowed):
        many_rater_view(who["alice"], store, rid, REL)   # a reviewer sees her calibration, never every call
