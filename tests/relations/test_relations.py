"""Hand-computed cases for every relation, vote and score (EMSE21 s2.2, s4.4; ORMR s V-A)."""

import math

import numpy as np
import pytest

from objrel.relations import classify as R
from objrel.relations import common as C

P = R.Prediction.from_probs


# ---------------------------------------------------------------- certainty


def test_single_certainty_is_min_gap_to_any_other_label():
    # [0.2, 0.5, 0.3]: label 1 -> min(|0.5-0.2|, |0.5-0.3|) = 0.2; label 0 -> min(0.3, 0.1) = 0.1
    assert R.certainty_single([0.2, 0.5, 0.3], 1) == pytest.approx(0.2)
    assert R.certainty_single([0.2, 0.5, 0.3], 0) == pytest.approx(0.1)


def test_top_certainty_is_top1_minus_top2():
    assert R.top_certainty(P([0.1, 0.7, 0.2])) == pytest.approx(0.5)


def test_multi_label_certainties_of_section_4_4_1_example():
    # EMSE21 s4.4.1: [0.8, 0.9, 0.2] for airplane, person, motorcycle -> |2p-1| = 0.6, 0.8, 0.6
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
        ([0.6, 0.3, 0.1], C.HOLDS),     # same label, certainty 0.3 < 0.5
        ([0.8, 0.1, 0.1], C.VIOLATED),  # same label, certainty 0.7 > 0.5
        ([0.7, 0.2, 0.1], C.VIOLATED),  # same label, equal certainty: "strictly lower" fails
        ([0.3, 0.6, 0.1], C.HOLDS),     # label changed
    ],
)
def test_mr1_single(mutant, verdict):
    assert R.mr1_single(SRC, P(mutant)).verdict == verdict


def test_mr1_single_records_both_certainties():
    c = R.mr1_single(SRC, P([0.6, 0.3, 0.1]))
    assert c.source_certainty == pytest.approx(0.5) and c.mutant_certainty == pytest.approx(0.3)
    assert c.label_changed is False


@pytest.mark.parametrize("mutant, verdict", [([0.4, 0.35, 0.25], C.HOLDS), ([0.3, 0.6, 0.1], C.VIOLATED)])
def test_mr2_single(mutant, verdict):
    # MR-2 only asks for the same top-1 label, whatever the certainty does
    assert R.mr2_single(SRC, P(mutant)).verdict == verdict


# ---------------------------------------------------------------- multi-label MR-1 / MR-2

MSRC = P([0.8, 0.9, 0.2], "multi")  # {airplane, person}, certainties 0.6, 0.8


@pytest.mark.parametrize(
    "mutant, verdict",
    [
        ([0.7, 0.6, 0.1], C.HOLDS),      # same set, certainties 0.4 < 0.6 and 0.2 < 0.8
        ([0.7, 0.95, 0.1], C.VIOLATED),  # person's certainty rose to 0.9
        ([0.8, 0.6, 0.1], C.VIOLATED),   # airplane's certainty unchanged (0.6): not strictly lower
        ([0.3, 0.9, 0.2], C.HOLDS),      # set changed to {person}
        ([0.8, 0.9, 0.7], C.HOLDS),      # set grew to {airplane, person, motorcycle}
    ],
)
def test_mr1_multi(mutant, verdict):
    assert R.mr1_multi(MSRC, P(mutant, "multi", interest=[0, 1])).verdict == verdict


@pytest.mark.parametrize("mutant, verdict", [([0.51, 0.99, 0.49], C.HOLDS), ([0.8, 0.9, 0.5], C.VIOLATED),
                                             ([0.8, 0.4, 0.1], C.VIOLATED)])
def test_mr2_multi(mutant, verdict):
    assert R.mr2_multi(MSRC, P(mutant, "multi")).verdict == verdict


def test_check_dispatches_on_task_and_rejects_unknown_relation():
    assert R.check("MR-1", MSRC, P([0.7, 0.95, 0.1], "multi")).verdict == C.VIOLATED
    assert R.check("MR-2", SRC, P([0.3, 0.6, 0.1])).verdict == C.VIOLATED
    with pytest.raises(ValueError, match="MR-3"):
        R.check("MR-3", SRC, SRC)


# ---------------------------------------------------------------- votes


def test_two_of_three_vote():
    assert C.vote("g", "MR-1", [C.VIOLATED, C.HOLDS, C.VIOLATED], 2).flagged
    assert not C.vote("g", "MR-1", [C.VIOLATED, C.HOLDS, C.HOLDS], 2).flagged


def test_not_applicable_verdicts_do_not_count():
    v = C.vote("g", "MR-1", [C.VIOLATED, C.NOT_APPLICABLE, C.HOLDS], 2)
    assert (v.violations, v.applicable, v.n, v.flagged) == (1, 2, 3, False)


def test_eight_of_fifteen_vote():
    assert C.vote("p", "MR-2", [C.VIOLATED] * 8 + [C.HOLDS] * 7, 8).flagged
    assert not C.vote("p", "MR-2", [C.VIOLATED] * 7 + [C.HOLDS] * 8, 8).flagged


def test_vote_rejects_unknown_verdicts():
    with pytest.raises(ValueError, match="unknown verdicts"):
        C.vote("g", "MR-1", ["maybe"], 1)


# ---------------------------------------------------------------- relevancy scores (ORMR s V-A)


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
    assert C.weighted_score({"A": [1.0, 0.5], "B": [0.2]}) == pytest.approx(0.475)
    assert C.weighted_score({"A": []}) is None


def test_relevancy_s_is_mean_of_halves():
    rel = C.relevancy({"A": [1.0]}, {"B": [0.2, 0.4]})
    assert (rel.s_p, rel.s_r, rel.s) == pytest.approx((1.0, 0.3, 0.65))
    assert C.relevancy({}, {"B": [0.2]}).s is None


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
    assert R.mr1_single(a, P(list(np.array([1 / 3 + 0.1, 1 / 3, 1 / 3 - 0.1])))).verdict == C.VIOLATED
    assert math.isclose(R.top_certainty(a), 0.1, abs_tol=1e-12)


# ---------------------------------------------------------------- ORMR s V-A as the paper writes it


def test_seed002_weighted_score_keeps_h_n_of_all_operations():
    # preserving: N = 3 functions with H = 12, 12, 1; MvObjToImg gave 1.0 and 0.5, PsvObj 0.2, BldObjToImg none
    # S_p = (1.0 + 0.5) / (12 * 3) + 0.2 / (1 * 3) = 0.0416667 + 0.0666667 = 0.1083333
    h_p = {"move_to_background": 12, "blend_to_background": 12, "gray_background_blur": 1}
    d_p = {"move_to_background": [1.0, 0.5], "gray_background_blur": [0.2]}
    assert C.seed002_weighted_score(d_p, h_p) == pytest.approx(0.1083333, abs=1e-7)
    # removing: H = 9, 2, 2; RmvObjByMM not applicable (no mask): its 2 operations still count in H_n and N
    # S_r = 9 * 0.9 / (9 * 3) + (0.6 + 0.3) / (2 * 3) + 0 = 0.3 + 0.15 = 0.45
    h_r = {"fill_object_blur": 9, "inpaint": 2, "margin_fill": 2}
    d_r = {"fill_object_blur": [0.9] * 9, "inpaint": [0.6, 0.3]}
    assert C.seed002_weighted_score(d_r, h_r) == pytest.approx(0.45)
    # objrel's "applicable" weights drop RmvObjByMM from N: (0.9 + 0.45) / 2 = 0.675
    assert C.weighted_score(d_r) == pytest.approx(0.675)
    rel = C.seed002_relevancy(d_p, d_r, h_p, h_r, keys=("k1", "k2"))
    assert rel.scoring == "seed002" and rel.operations == ("k1", "k2")
    assert rel.s == pytest.approx((0.1083333 + 0.45) / 2, abs=1e-7)
    # all distances 1 -> weights sum to 1 -> S_p = 1
    assert C.seed002_weighted_score({fn: [1.0] * h for fn, h in h_p.items()}, h_p) == pytest.approx(1.0)
    # the paper's Table I: 25 preserving + 13 removing = 38 operations
    assert sum(C.SEED002_PAPER_OPERATIONS[f] for f in C.SEED002_PRESERVING) == 25
    assert sum(C.SEED002_PAPER_OPERATIONS[f] for f in C.SEED002_REMOVING) == 13
    with pytest.raises(ValueError, match="H_n"):
        C.seed002_weighted_score({"inpaint": [0.1, 0.2, 0.3]}, {"inpaint": 2})
    with pytest.raises(ValueError, match="outside"):
        C.seed002_weighted_score({"fill_object": [0.1]}, {"inpaint": 2})


def test_highest_ranked_label_and_inference_distance():
    # source ranks: label 1 (0.5) 1st, label 2 (0.3) 2nd, label 0 (0.1) 3rd, label 3 (0.1) 4th
    src = R.Prediction.from_probs(np.array([0.1, 0.5, 0.3, 0.1]), interest=[0, 2])
    assert src.ranks == {0: 3, 2: 2}
    assert R.highest_ranked_label(src, [0, 2]) == 2
    assert R.highest_ranked_label(src, [5]) is None
    # mutant: label 1 0.6, label 3 0.2, label 0 0.1 (3rd), label 2 0.1 (4th)
    mut = R.Prediction.from_probs(np.array([0.1, 0.6, 0.1, 0.2]), interest=[0, 2])
    # D_r(label 2) = (0.3 - 0.1) / 0.3 * (1/2 - 1/4) = 0.6667 * 0.25 = 0.1666667; D_r(label 0) = 0 * ... = 0
    assert R.inference_distance("MR-1", src, mut, [0, 2], highest_ranked=True) == pytest.approx(1 / 6)
    assert R.inference_distance("MR-1", src, mut, [0, 2]) == pytest.approx(1 / 12)   # mean over both labels
    # D_p(label 2) = (1 - 0.2/0.3) * (1 - (1/2 - 1/4)) = 0.3333 * 0.75 = 0.25
    assert R.inference_distance("MR-2", src, mut, [0, 2], highest_ranked=True) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        R.inference_distance("MR-3", src, mut, [0])


def test_distances_use_seed002_when_the_plan_holds_its_functions():
    from objrel.relations.votes import Distances, scoring_basis
    from objrel.mutations import plan as P

    plan = P.preset("all")
    basis = scoring_basis(plan)
    h = dict(basis.h)
    assert basis.name == "seed002" and set(h) == set(C.SEED002_PAPER_OPERATIONS)
    assert (h["gray_background_blur"], h["fill_object_blur"], h["inpaint"], h["margin_fill"]) == (1, 9, 2, 2)
    assert len(basis.operations) == sum(h.values())
    assert all(k.split("(")[0] in h for k in basis.operations) and "ORMR" in basis.describe()
    d = Distances(plan)
    d.add("MR-2", "move_to_background", 1.0)
    d.add("MR-2", "gray_background_blur", 0.5)
    d.add("MR-2", "fill_background", 1.0)       # not one of ORMR's functions: ignored by its S
    d.add("MR-1", "inpaint", 0.4)
    d.add("MR-1", "inpaint", 0.2)
    rel = d.relevancy()
    # S_p = 1.0 / (H_MvObj * 3) + 0.5 / (1 * 3); S_r = (0.4 + 0.2) / (2 * 3) = 0.1
    s_p = 1.0 / (h["move_to_background"] * 3) + 0.5 / 3
    assert rel.scoring == "seed002" and rel.s_p == pytest.approx(s_p) and rel.s_r == pytest.approx(0.1)
    assert rel.s == pytest.approx((s_p + 0.1) / 2) and rel.operations == basis.operations
    # a plan without them keeps objrel's applicable weights, and says so
    d3 = Distances(P.preset("colours3"))
    d3.add("MR-1", "fill_object", 0.4)
    d3.add("MR-2", "fill_background", 0.8)
    r3 = d3.relevancy()
    assert r3.scoring == "applicable" and r3.s_p == pytest.approx(0.8) and r3.s_r == pytest.approx(0.4)
    assert scoring_basis(P.preset("colours3")).name == "applicable"
    assert Distances().relevancy().scoring == "applicable"
