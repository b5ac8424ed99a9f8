"""Test T, MR-1 / MR-2 for detection records, missing vs incorrect detections and seed 002's distances,
all on values computed by hand."""

from __future__ import annotations

import pytest

from objrel.relations import common as C
from objrel.relations.detect import (INCORRECT_DETECTION, MISSING_DETECTION, check_mr1, check_mr2, distance_preserving,
                                     distance_removing, iou_test)
from objrel.data.detections import Detections
from objrel.relations.associate import RecordMatch, iou, mutant_records
from objrel.relations import detect as DR
from objrel.mutations import preset_with_operators

GT = (0, 0, 10, 10)


def rec(box, label="face", score=0.9, index=0):
    return RecordMatch(index, label, score, iou(box, GT), tuple(float(v) for v in box))


def test_iou_test_uses_iou_at_least_the_threshold_and_the_label():
    # a 3x10 strip of the 10x10 object: IoU exactly 0.3 -> detected (>=); 2.9 columns -> 0.29 -> not
    assert iou_test(rec((0, 0, 3, 10)), "face") == 1
    assert iou_test(rec((0, 0, 2.9, 10)), "face") == 0
    assert iou_test(rec((0, 0, 3, 10), label="cat face"), "face") == 0   # right place, wrong label
    assert iou_test(RecordMatch(), "face") == 0                           # no record at all
    # the threshold is configurable: at 0.5 the 0.3 strip no longer counts, a 5x10 half does
    assert iou_test(rec((0, 0, 3, 10)), "face", threshold=0.5) == 0
    assert iou_test(rec((0, 0, 5, 10)), "face", threshold=0.5) == 1
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        iou_test(rec(GT), "face", threshold=0)


def test_mr1_object_corrupted_t_should_flip():
    src = rec((1, 0, 11, 10))                                  # 9x10 / 110 -> 0.818
    gone = check_mr1(src, RecordMatch(), "face")
    assert (gone.verdict, gone.outcome, gone.t_source, gone.t_mutant) == (C.HOLDS, DR.REMOVED, 1, 0)
    assert gone.distance == pytest.approx(1.0)                 # removing: (IoU - 0) / IoU
    still = check_mr1(src, rec((0, 0, 10, 8)), "face")        # 10x8 / 100 -> 0.8 >= 0.3: still there
    assert (still.verdict, still.outcome) == (C.VIOLATED, DR.STILL_DETECTED)
    assert still.distance == pytest.approx((90 / 110 - 0.8) / (90 / 110))
    # moved off the object: IoU 0.2 < 0.3 counts as removed
    assert check_mr1(src, rec((0, 0, 2, 10)), "face").verdict == C.HOLDS
    # an object not detected on the source has nothing to remove
    na = check_mr1(RecordMatch(), rec(GT), "face")
    assert (na.verdict, na.outcome, na.distance) == (C.NOT_APPLICABLE, DR.NOT_DETECTED, None)


def test_mr2_background_corrupted_t_should_stay_missing_vs_incorrect():
    found, lost = rec(GT), RecordMatch()
    kept = check_mr2(found, rec((0, 0, 10, 9)), "face")
    assert (kept.verdict, kept.outcome, kept.distance) == (C.HOLDS, DR.KEPT, pytest.approx(0.9))
    missing = check_mr2(found, lost, "face")
    assert (missing.verdict, missing.outcome, missing.t_source, missing.t_mutant) == (
        C.VIOLATED, MISSING_DETECTION, 1, 0)
    assert missing.distance == 0.0
    incorrect = check_mr2(lost, rec(GT), "face")
    assert (incorrect.verdict, incorrect.outcome, incorrect.t_source, incorrect.t_mutant) == (
        C.VIOLATED, INCORRECT_DETECTION, 0, 1)
    assert incorrect.distance is None                          # no source record: no IoU to compare with
    assert check_mr2(lost, lost, "face").outcome == DR.STILL_MISSED
    # the object is now reported with another label: T drops -> missing detection, label_changed
    relabelled = check_mr2(found, rec(GT, label="cat face"), "face")
    assert (relabelled.outcome, relabelled.label_changed, relabelled.distance) == (MISSING_DETECTION, True, 0.0)
    assert (relabelled.iou_source, relabelled.iou_mutant) == (1.0, 1.0)


def test_seed002_distances():
    # IoU 0.8 -> 0.6: preserving 1 - 0.2 / 0.8 = 0.75, removing 0.25
    assert distance_preserving(0.8, 0.6, True) == pytest.approx(0.75)
    assert distance_removing(0.8, 0.6) == pytest.approx(0.25)
    # a better box after mutation: nothing lost
    assert distance_preserving(0.5, 0.9, True) == 1.0 and distance_removing(0.5, 0.9) == 0.0
    assert distance_preserving(0.8, 0.8, False) == 0.0       # label changed
    assert distance_preserving(0.0, 0.5, True) is None and distance_removing(0.0, 0.5) is None


def test_relevancy_of_a_record_weights_each_operator_equally():
    """S_r over random erase {1, 0.5} and fill_object {0}: (1 + 0.5) / (2 * 2) + 0 / (1 * 2) = 0.375;
    S_p over background noise {1, 1, 0.25}: 2.25 / 3 = 0.75; S = 0.5625."""
    rel = C.relevancy({"background_noise": [1.0, 1.0, 0.25]}, {"random_erase": [1.0, 0.5], "fill_object": [0.0]})
    assert (rel.s_p, rel.s_r, rel.s) == (pytest.approx(0.75), pytest.approx(0.375), pytest.approx(0.5625))


def test_k_of_n_vote_counts_violations_and_ignores_na():
    v = C.vote("MR-1 random erase", "MR-1", [C.VIOLATED, C.HOLDS, C.VIOLATED], 2)
    assert (v.violations, v.applicable, v.flagged) == (2, 3, True)
    v = C.vote("MR-1 random erase", "MR-1", [C.NOT_APPLICABLE] * 3, 2)
    assert (v.applicable, v.flagged) == (0, False)


def test_erase_noise_plan_is_two_of_three_erase_and_noise():
    plan = preset_with_operators("erase_noise")
    assert [(g.name, g.relation, g.k, len(g.mutations)) for g in plan.groups] == [
        ("MR-1 random erase", "MR-1", 2, 3), ("MR-2 background noise", "MR-2", 2, 3),
        ("MR-2 object noise", "MR-2", 2, 3)]
    assert [m.key for m in plan.groups[0].mutations] == [
        "random_erase(ratio=0.5)", "random_erase(ratio=0.7)", "random_erase(ratio=0.9)"]
    assert plan.primary("MR-2").name == "MR-2 background noise"
    # a classifier preset works on the associated object; extra operators add a majority group
    p = preset_with_operators("colours3", operators=["inpaint"])
    assert [g.name for g in p.groups] == ["MR-1 3 colours", "MR-2 3 colours", "inpaint"]


def test_t_reads_the_units_label_when_another_label_overlaps_the_object_better():
    """A multi-class detector reports "face" at IoU 0.826 and "cat face" at IoU 0.800 over a cat face (GT
    100 x 100, boxes its top 82.6 and 80 rows).  Seed 001 s4.4's T asks whether the object is still detected
    as a cat face: it is (0.800 >= 0.3), so MR-1 is violated ("still detected", not "removed") and MR-2
    holds ("kept", not "missing detection").  Seed 002 s V-B's rcd' is the "face" record (any label, best
    IoU): D preserving is 0 (label changed), D removing max(0, 1 - 0.826) / 1 = 0.174."""
    gt = (0, 0, 100, 100)
    det = Detections(((0, 0, 100, 82.6), (0, 0, 100, 80)), ("face", "cat face"), (0.9, 0.8))
    recs = mutant_records(det, gt, "cat face")
    assert (recs.nearest.index, recs.nearest.label, recs.nearest.iou) == (0, "face", pytest.approx(0.826))
    assert (recs.own.index, recs.own.label, recs.own.iou) == (1, "cat face", pytest.approx(0.8))
    src = RecordMatch(0, "cat face", 0.95, 1.0, (0.0, 0.0, 100.0, 100.0))
    mr1 = check_mr1(src, recs, "cat face")
    assert (mr1.verdict, mr1.outcome, mr1.t_mutant) == (C.VIOLATED, DR.STILL_DETECTED, 1)
    assert mr1.distance == pytest.approx(0.174) and mr1.iou_mutant == pytest.approx(0.826)
    assert mr1.iou_own == pytest.approx(0.8)
    mr2 = check_mr2(src, recs, "cat face")
    assert (mr2.verdict, mr2.outcome, mr2.t_mutant) == (C.HOLDS, DR.KEPT, 1)
    assert (mr2.label_changed, mr2.distance) == (True, 0.0)
    # with no "cat face" record left, T drops even though the "face" record still covers the object
    gone = mutant_records(Detections(((0, 0, 100, 82.6),), ("face",), (0.9,)), gt, "cat face")
    assert gone.own == RecordMatch() and check_mr1(src, gone, "cat face").outcome == DR.REMOVED
    assert check_mr2(src, gone, "cat face").outcome == MISSING_DETECTION
