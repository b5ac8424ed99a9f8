"""The planted-shortcut ground truth as a dose: swap-flip and sufficiency rates from stored per-swap outcomes,
re-derived at any draw count and threshold, scored by hand; the ROC AUC against scikit-learn; the counterfactual pool.

Every expected count below is worked out by hand in the comments, never copied from the code's output."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.intervals import wilson_interval
from objrel.studies.shortcut import tables as T
from objrel.studies.shortcut.groundtruth import ANY_FLIP, MAJORITY, Reliance, UnitReliance
from objrel.studies.shortcut.scoring import flags_to_dict, roc_auc, score_at

Z = ((0, 0, 0), (0, 0, 0))


def rel(sid, flips=Z, fails=Z, own=False, correct=True) -> Reliance:
    """A correct single-label inference with two other types and three draws per type."""
    if not correct:
        return Reliance(sid, (0,), (1,), False)
    return Reliance(sid, (0,), (0,), True, swap_types=(1, 2), flips=flips, alone_fails=fails, own_alone=own)


# a: swaps flip 0 of the first draws, 3 of 6 over three draws          -> swap rate k=1: 0/2, k=3: 3/6 = 0.5
# b: one flip, on the first draw of type 1                             -> k=1: 1/2 = 0.5, k=3: 1/6
# c: no flip; own background alone gives the answer; other types' bare
#    backgrounds fail on (1,1,1) and (0,1,1)                           -> sufficiency k=1: 1/2, k=3: 5/6
# d: bare backgrounds all fail, but the own one does not give the answer -> sufficiency 0 whatever k
# e: a wrong inference                                                 -> never scored
TRUTH = {"a": rel("a", flips=((0, 1, 1), (0, 0, 1))),
         "b": rel("b", flips=((1, 0, 0), (0, 0, 0))),
         "c": rel("c", fails=((1, 1, 1), (0, 1, 1)), own=True),
         "d": rel("d", fails=((1, 1, 1), (1, 1, 1)), own=False),
         "e": rel("e", correct=False)}
FLAGS = {"MR-2 3 colours": ("MR-2", "3 colours", {"a", "d", "e"}),
         "MR-1 3 colours": ("MR-1", "3 colours", {"c"})}
IDS = ["a", "b", "c", "d", "e"]


def counts(scores):
    return {s.detector: (s.tp, s.fp, s.fn, s.tn) for s in scores}


def test_rates_of_one_inference_by_hand():
    r = rel("x", flips=((1, 0, 0, 0), (1, 1, 0, 0)), fails=((0, 0, 0, 0), (1, 1, 1, 1)), own=True)
    assert r.draws == 4
    assert r.swap_rate(1) == 1.0                 # (1 + 1) / 2
    assert r.swap_rate(2) == 0.75                # (1 + 0 + 1 + 1) / 4
    assert r.swap_rate(4) == 0.375               # 3 / 8
    assert r.sufficiency_rate(4) == 0.5          # 4 / 8, the own background gives the answer
    assert r.reliance_rate(4) == 0.5             # the larger of the two
    v = r.verdict(4, MAJORITY)                   # 0.375 < 0.5: not swap-dependent; 0.5 >= 0.5: sufficient
    assert (v.swap_dependent, v.background_sufficient, v.reliant) == (False, True, True)
    v = r.verdict(4, ANY_FLIP)
    assert (v.swap_dependent, v.background_sufficient, v.reliant) == (True, True, True)
    with pytest.raises(ValueError, match=r"draw count must be in 1\.\.4"):
        r.swap_rate(5)
    assert rel("w", correct=False).swap_rate() is None and rel("w", correct=False).verdict(1).reliant is None


def test_threshold_and_draws_re_derive_the_confusion_counts_by_hand():
    # 1 draw, any: reliant = {b (0.5), c (suff 0.5)}; a (0) and d (0) are not
    #   MR-2 flags a, d (e is wrong): TP 0, FP 2, FN b c = 2, TN 0;  MR-1 flags c: TP 1, FP 0, FN b = 1, TN a d = 2
    assert counts(score_at(FLAGS, IDS, TRUTH, 1, ANY_FLIP)) == {"MR-2 3 colours": (0, 2, 2, 0),
                                                                "MR-1 3 colours": (1, 0, 1, 2)}
    # 3 draws, any: reliant = {a (0.5), b (1/6), c (5/6)}
    #   MR-2: TP a, FP d, FN b c, TN -;  MR-1: TP c, FN a b, TN d
    assert counts(score_at(FLAGS, IDS, TRUTH, 3, ANY_FLIP)) == {"MR-2 3 colours": (1, 1, 2, 0),
                                                                "MR-1 3 colours": (1, 0, 2, 1)}
    # 3 draws, majority: reliant = {a (0.5 >= 0.5), c (5/6)}; b (1/6) drops out
    #   MR-2: TP a, FP d, FN c, TN b;  MR-1: TP c, FN a, TN b d
    at = score_at(FLAGS, IDS, TRUTH, 3, MAJORITY)
    assert counts(at) == {"MR-2 3 colours": (1, 1, 1, 1), "MR-1 3 colours": (1, 0, 1, 2)}
    mr2 = next(s for s in at if s.relation == "MR-2")
    assert mr2.precision == 0.5 and mr2.precision_ci == pytest.approx((0.0945, 0.9055), abs=1e-4)   # Wilson 1 of 2
    assert mr2.precision_ci == wilson_interval(1, 2)
    # each relation against its own facet, 3 draws, majority: swap-dependent = {a}; sufficient = {c}
    #   MR-2 vs {a}: TP a, FP d, TN b c;  MR-1 vs {c}: TP c, TN a b d
    assert counts(score_at(FLAGS, IDS, TRUTH, 3, MAJORITY, "matched")) == {"MR-2 3 colours": (1, 1, 0, 2),
                                                                           "MR-1 3 colours": (1, 0, 0, 3)}


def results_of(truths: dict, flags: dict, relevancy: dict | None = None) -> dict:
    """A results file's form with one seed holding the two single-label models given."""
    models = {name: {"truth": {k: v.to_dict() for k, v in truths[name].items()},
                     "flags": flags_to_dict(list(truths[name]), flags[name]), "relevancy": relevancy or {}}
              for name in truths}
    return {"config": {"draws": 3}, "seeds": [{"seed": 0, "models": models}]}


def test_the_tables_re_derive_from_the_results_file_per_model_and_pooled():
    # the same five inferences as the biased model; an unbiased model with two correct, one reliant at 3 draws only
    unb = {"p": rel("p", flips=((0, 0, 1), (0, 0, 0))), "q": rel("q")}
    results = results_of({"biased": TRUTH, "unbiased": unb},
                         {"biased": FLAGS, "unbiased": {"MR-2 3 colours": ("MR-2", "3 colours", {"q"}),
                                                        "MR-1 3 colours": ("MR-1", "3 colours", set())}})
    assert [(d, t.name) for d, t in T.settings(results)] == [(1, "any"), (1, "majority"), (3, "any"),
                                                             (3, "majority")]           # 8 > the 3 draws made
    # base rates: biased 1 any: {b, c} of 4; unbiased 1 any: none of 2, 3 any: p (1/6) of 2
    assert T.base_rate(results, "single", "biased", 1, ANY_FLIP) == (2, 4)
    assert T.base_rate(results, "single", "unbiased", 1, ANY_FLIP) == (0, 2)
    assert T.base_rate(results, "single", "unbiased", 3, ANY_FLIP) == (1, 2)
    assert T.base_rate(results, "single", None, 3, ANY_FLIP) == (4, 6)
    # unbiased at 3, any: MR-2 flags q (not reliant): FP 1; p reliant, unflagged: FN 1
    unb_scores = counts(T.scores_at(results, "single", "unbiased", 3, ANY_FLIP))
    assert unb_scores["MR-2 3 colours"] == (0, 1, 1, 0)
    # pooled = biased (1, 1, 2, 0) + unbiased (0, 1, 1, 0)
    assert counts(T.scores_at(results, "single", None, 3, ANY_FLIP))["MR-2 3 colours"] == (1, 2, 3, 0)
    curve = T.curve_table(results, "single", None)
    row = curve[(curve["draws"] == 3) & (curve["threshold"] == "majority") & (curve["detector"] == "MR-2 3 colours")]
    # biased (1, 1, 1, 1) + unbiased at majority: p 1/6 not reliant, q flagged -> (0, 1, 0, 1)
    assert row[["TP", "FP", "FN", "TN", "reliant", "scored"]].iloc[0].tolist() == [1, 2, 1, 2, 2, 6]
    # the stored Reliance round-trips through the file's form
    assert Reliance.from_dict(TRUTH["c"].to_dict()) == TRUTH["c"]


def test_notes_mark_figures_the_counts_fix():
    # a detector that flags every scored unit: recall 100% and precision = base rate, by construction
    truth = {"u": rel("u", flips=((1, 1, 1), (1, 1, 1))), "v": rel("v")}
    flags = {"MR-1 3 colours": ("MR-1", "3 colours", {"u", "v"}), "MR-2 3 colours": ("MR-2", "3 colours", set())}
    table = T.score_table(score_at(flags, ["u", "v"], truth, 3, ANY_FLIP)).set_index("detector")
    assert table.loc["MR-1 3 colours", "note"] == T.NOTE_FLAGS_ALL
    assert table.loc["MR-2 3 colours", "note"] == T.NOTE_FLAGS_NONE
    only = {"u": truth["u"]}                     # every scored unit reliant: precision cannot fail
    table = T.score_table(score_at(flags, ["u"], only, 3, ANY_FLIP)).set_index("detector")
    assert T.NOTE_NO_NEGATIVE in table.loc["MR-1 3 colours", "note"]


def test_unit_reliance_rates_use_the_detection_test():
    # T lost on 1 of 2 swaps of type 1 and both of type 2 -> 3/4; the own background gives no detection -> 0
    u = UnitReliance("1/r0", "1", "disc", 1, 4, 3, 0, 0, True, False, (1, 2), ((1, 0), (1, 1)), ((1, 1), (1, 1)))
    assert u.swap_rate(2) == 0.75 and u.sufficiency_rate(2) == 0.0 and u.swap_rate(1) == 1.0
    assert UnitReliance.from_dict(u.to_dict()) == u


def test_roc_auc_by_hand_and_against_sklearn():
    from sklearn.metrics import roc_auc_score

    # positives 0.9 and 0.8; negatives 0.8, 0.3, 0.1: 0.9 beats all three (3), 0.8 ties one (0.5) and beats two (2)
    values, pos = [0.9, 0.8, 0.8, 0.3, 0.1], [True, False, True, False, False]
    assert roc_auc(values, pos) == pytest.approx(5.5 / 6)
    assert roc_auc(values, pos) == pytest.approx(roc_auc_score(pos, values))
    rng = np.random.default_rng(3)
    for _ in range(5):
        v = rng.integers(0, 6, size=40).astype(float)            # many ties
        y = rng.random(40) < 0.4
        assert roc_auc(v, y) == pytest.approx(roc_auc_score(y, v))
    assert roc_auc([0.1, 0.2], [True, True]) is None


def test_auc_table_reads_low_s_as_reliant():
    # at 3 draws, any: a, b reliant by swaps; c, d not (c is sufficient, but the AUC is against the swap-flip rate)
    truth = {k: TRUTH[k] for k in "abcd"}
    s_of = {"a": 0.1, "b": 0.2, "c": 0.7, "d": 0.9}             # the reliant ones have the lowest S
    relevancy = {k: [s_of[k], 1 - s_of[k], s_of[k]] for k in truth}
    results = results_of({"biased": truth, "unbiased": {}}, {"biased": FLAGS, "unbiased": {}}, relevancy)
    auc = T.auc_table(results)
    row = auc[(auc["model"] == "biased") & (auc["draws"] == 3) & (auc["threshold"] == "any")].iloc[0]
    assert (row["AUC S"], row["AUC S_p"], row["AUC S_r"]) == (1.0, 1.0, 0.0)     # S_r = 1 - S ranks the other way
    assert (row["pos"], row["neg"]) == (2, 2)
    # 1 draw, any: only b flips (a's first draws do not): b 0.2 vs a 0.1, c 0.7, d 0.9 -> beats 2 of 3
    row = auc[(auc["model"] == "biased") & (auc["draws"] == 1) & (auc["threshold"] == "any")].iloc[0]
    assert row["AUC S"] == pytest.approx(2 / 3)


def test_the_counterfactual_pool_is_seeded_prefix_stable_and_not_the_training_backgrounds():
    from objrel.studies.shortcut.scenes import (MAX_POOL_DRAWS, POOL_PER_TYPE, SyntheticConfig,
                                                counterfactual_background, pool_background, pool_members,
                                                render_scene)

    cfg = SyntheticConfig(n_classes=3, seed=5)
    members = pool_members(cfg, "test", 7, 1)
    assert len(set(members.tolist())) == MAX_POOL_DRAWS and members.max() < POOL_PER_TYPE
    assert np.array_equal(members, pool_members(cfg, "test", 7, 1))                   # seeded
    assert not np.array_equal(members, pool_members(cfg, "test", 8, 1))               # per scene
    bg = counterfactual_background(cfg, "test", 7, 1, 2)
    assert np.array_equal(bg, pool_background(cfg, 1, int(members[2])))
    train = {render_scene(cfg, "train", i).background.tobytes() for i in range(60)}
    drawn = {counterfactual_background(cfg, "test", i, t, d).tobytes() for i in range(10) for t in range(3)
             for d in range(3)}
    assert not train & drawn
    with pytest.raises(ValueError, match="draw must be in"):
        counterfactual_background(cfg, "test", 7, 1, MAX_POOL_DRAWS)
