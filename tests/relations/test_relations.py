"""Hand-computed cases for every relation, vote and score (seed 000 s2.2, s4.4; seed 002 s V-A)."""

import math

import numpy as np
import pytest

from objrel.relations import classify as R

P = R.Prediction.from_probs


# ---------------------------------------------------------------- certainty


def test_single_certainty_is_min_gap_to_any_other_label():
    # [0.2, 0.5, 0.3]: label 1 -> min(|0.5-0.2|, |0.5-0.3|) = 0.2; label 0 -> min(0.3, 0.1) = 0.1
    assert R.certainty_single([0.2, 0.5, 0.3], 1) == pytest.approx(0.2)
    assert R.certainty_single([0.2, 0.5, 0.3], 0) == pytest.approx(0.1)


def test_top_certainty_is_top1_minus_top2():
    assert R.top_certainty(P([0.1, 0.7, 0.2])) == pytest.approx(0.5)


def test_multi_label_certainties_of_section_4_4_1_example():
    # seed 000 s4.4.1: [0.8, 0.9, 0.2] for airplane, person, motorcycle -> |2p-1| = 0.6, 0.8, 0.6
    assert [R.certainty_multi(p) for p in (0.8, 0.9, 0.2)] == pytest.approx([0.6, 0.8, 0.6])


# ---------------------------------------------------------------- multi-label decision (s2.2)


def test_multi_label_sets_of_section_2_2_example():
    # person, airplane, motorcycle, car; threshold 0.5
    wrong = P([0.8, 0.7, 0.2, 0.6], "multi")
    right = P([0.8, 0.7, 0.6, 0.2], "multi")
    assert set(wrong.predicted) == {0, 1, 3}  # {person, airplane, car}: incorrect, truth is {0, 1, 2}
    assert set(right.predicted) == {0, 1, 2}  # correct
    assert set(P([0.5, 0.49], "multi").predicted) == {0}  # p >= threshold counts


# ---------------------------------------------------------------- single-label MR-1 / MR-2


SRC = P([0.7, 0.2, 0.1])  # certainty 0.5


@pytest.mark.parametrize(
    "mutant, verdict",
    [
        ([0.6, 0.3, 0.1], R.HOLDS),     # same label, certainty 0.3 < 0.5
        ([0.8, 0.1, 0.1], R.VIOLATED),  # same label, certainty 0.7 > 0.5
        ([0.7, 0.2, 0.1], R.VIOLATED),  # same label, equal certainty: "strictly lower" fails
        ([0.3, 0.6, 0.1], R.HOLDS),     # label changed
    ],
)
def test_mr1_single(mutant, verdict):
    assert R.mr1_single(SRC, P(mutant)).verdict == verdict


def test_mr1_single_records_both_certainties():
    c = R.mr1_single(SRC, P([0.6, 0.3, 0.1]))
    assert c.source_certainty == pytest.approx(0.5) and c.mutant_certainty == pytest.approx(0.3)
    assert c.label_changed is False


@pytest.mark.parametrize("mutant, verdict", [([0.4, 0.35, 0.25], R.HOLDS), ([0.3, 0.6, 0.1], R.VIOLATED)])
def test_mr2_single(mutant, verdict):
    # MR-2 only asks for the same top-1 label, whatever the certainty does
    assert R.mr2_single(SRC, P(mutant)).verdict == verdict


# ---------------------------------------------------------------- multi-label MR-1 / MR-2

MSRC = P([0.8, 0.9, 0.2], "multi")  # {airplane, person}, certainties 0.6, 0.8


@pytest.mark.parametrize(
    "mutant, verdict",
    [
        ([0.7, 0.6, 0.1], R.HOLDS),      # same set, certainties 0.4 < 0.6 and 0.2 < 0.8
        ([0.7, 0.95, 0.1], R.VIOLATED),  # person's certainty rose to 0.9
        ([0.8, 0.6, 0.1], R.VIOLATED),   # airplane's certainty unchanged (0.6): not strictly lower
        ([0.3, 0.9, 0.2], R.HOLDS),      # set changed to {person}
        ([0.8, 0.9, 0.7], R.HOLDS),      # set grew to {airplane, person, motorcycle}
    ],
)
def test_mr1_multi(mutant, verdict):
    assert R.mr1_multi(MSRC, P(mutant, "multi", interest=[0, 1])).verdict == verdict


@pytest.mark.parametrize("mutant, verdict", [([0.51, 0.99, 0.49], R.HOLDS), ([0.8, 0.9, 0.5], R.VIOLATED),
                                             ([0.8, 0.4, 0.1], R.VIOLATED)])
def test_mr2_multi(mutant, verdict):
    assert R.mr2_multi(MSRC, P(mutant, "multi")).verdict == verdict


def test_check_dispatches_on_task_and_rejects_unknown_relation():
    assert R.check("MR-1", MSRC, P([0.7, 0.95, 0.1], "multi")).verdict == R.VIOLATED
    assert R.check("MR-2", SRC, P([0.3, 0.6, 0.1])).verdict == R.VIOLATED
    with pytest.raises(ValueError, match="MR-3"):
        R.check("MR-3", SRC, SRC)


# ---------------------------------------------------------------- votes


def test_two_of_three_vote():
    assert R.vote("g", "MR-1", [R.VIOLATED, R.HOLDS, R.VIOLATED], 2).flagged
    assert not R.vote("g", "MR-1", [R.VIOLATED, R.HOLDS, R.HOLDS], 2).flagged


def test_not_applicable_verdicts_do_not_count():
    v = R.vote("g", "MR-1", [R.VIOLATED, R.NOT_APPLICABLE, R.HOLDS], 2)
    assert (v.violations, v.applicable, v.n, v.flagged) == (1, 2, 3, False)


def test_eight_of_fifteen_vote():
    assert R.vote("p", "MR-2", [R.VIOLATED] * 8 + [R.HOLDS] * 7, 8).flagged
    assert not R.vote("p", "MR-2", [R.VIOLATED] * 7 + [R.HOLDS] * 8, 8).flagged


def test_vote_rejects_unknown_verdicts():
    with pytest.raises(ValueError, match="unknown verdicts"):
        R.vote("g", "MR-1", ["maybe"], 1)


# ---------------------------------------------------------------- relevancy scores (seed 002 s V-A)


def test_preserving_distance_by_hand():
    # p 0.8 rank 1 -> p' 0.6 rank 2: (1 - 0.2/0.8) * (1 - (1 - 1/2)) = 0.75 * 0.5
    assert R.distance_preserving(0.8, 1, 0.6, 2) == pytest.approx(0.375)
    # nothing dropped: 1 * 1
    assert R.distance_preserving(0.8, 1, 0.9, 1) == pytest.approx(1.0)


def test_removing_distance_by_hand():
    # (0.2/0.8) * (1 - 1/2)
    assert R.distance_removing(0.8, 1, 0.6, 2) == pytest.approx(0.125)
    # probability rose: max(0, .) = 0
    assert R.distance_removing(0.8, 1, 0.9, 1) == 0.0
    # to zero and far down the ranking: 1 * (1 - 1/1000)
    assert R.distance_removing(0.5, 1, 0.0, 1000) == pytest.approx(0.999)


def test_weighted_score_uses_one_over_hn_times_n():
    # function A has 2 operations (H=2), B has 1 (H=1); N = 2
    # (1.0 + 0.5)/(2*2) + 0.2/(1*2) = 0.375 + 0.1
    assert R.weighted_score({"A": [1.0, 0.5], "B": [0.2]}) == pytest.approx(0.475)
    assert R.weighted_score({"A": []}) is None


def test_relevancy_s_is_mean_of_halves():
    rel = R.relevancy({"A": [1.0]}, {"B": [0.2, 0.4]})
    assert (rel.s_p, rel.s_r, rel.s) == pytest.approx((1.0, 0.3, 0.65))
    assert R.relevancy({}, {"B": [0.2]}).s is None


# ---------------------------------------------------------------- Prediction records


def test_prediction_keeps_ranks_and_probs_of_interest():
    probs = np.array([0.05, 0.5, 0.1, 0.3, 0.05])
    pred = P(probs, interest=[2], top_k=2)
    assert pred.top_labels == (1, 3) and pred.top_probs == pytest.approx((0.5, 0.3))
    assert pred.ranks == {2: 3}
    assert pred.prob(2) == pytest.approx(0.1)
    with pytest.raises(KeyError, match="was not kept"):
        pred.prob(4)


def test_prediction_round_trips_through_dict():
    pred = P([0.1, 0.6, 0.3], "multi", interest=[0], threshold=0.25)
    again = R.Prediction.from_dict(pred.to_dict())
    assert again == pred and set(again.predicted) == {1, 2}


def test_prediction_rejects_unknown_task():
    with pytest.raises(ValueError, match="task must be"):
        P([0.5, 0.5], "ranking")


def test_strictness_survives_float_noise():
    # identical vectors must not count as "less certain"
    a = P([1 / 3 + 0.1, 1 / 3, 1 / 3 - 0.1])
    assert R.mr1_single(a, P(list(np.array([1 / 3 + 0.1, 1 / 3, 1 / 3 - 0.1])))).verdict == R.VIOLATED
    assert math.isclose(R.top_certainty(a), 0.1, abs_tol=1e-12)
