"""Every comparison that decides a verdict, at margins 0, +-TIE_TOLERANCE/2 and +-2 TIE_TOLERANCE, computed by hand.

A margin within the tolerance is a tie: decided as no change (the strict comparison's answer for an exact tie,
seed 000 s4.4 and seed 001 s4.4) and marked ``tie``; a margin beyond it decides as the papers do.
"""

from __future__ import annotations

import pytest

from objrel.constants import TIE_TOLERANCE
from objrel.data.detections import Detections
from objrel.data.sample import TargetObject
from objrel.models.runtimes import MATCH_TOLERANCE
from objrel.relations import classify as R
from objrel.relations.associate import RecordMatch, associated_objects, match_record
from objrel.relations.common import HOLDS, TIE_NOTE, VIOLATED
from objrel.relations.detect import check_mr1, check_mr2, iou_tie, iou_test

TOL = TIE_TOLERANCE
# (margin, beyond the tolerance in the verdict-turning direction, within the tolerance)
MARGINS = [(0.0, False, True), (TOL / 2, False, True), (-TOL / 2, False, True), (2 * TOL, True, False),
           (-2 * TOL, False, False)]


def test_the_tie_tolerance_is_four_times_the_runtimes_match_tolerance():
    """A certainty change is a difference of two differences of probabilities, each within the exported
    runtimes' match tolerance of torch's: the tolerance bounds the noise of all four."""
    assert MATCH_TOLERANCE == 1e-5 and TOL == 4 * MATCH_TOLERANCE
    assert "4e-05" in TIE_NOTE


def single(p) -> R.Prediction:
    return R.Prediction.from_probs(p, "single", interest=(0,))


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_single_label_mr2_turns_only_when_another_label_leads_by_more_than_the_tolerance(m, beyond, within):
    """Source top label 0; on the mutant label 0 leads label 1 by ``m`` (p0 - p1 = m).  The label changes
    only at m = -2 tol; at -tol/2 label 1 is the argmax but within the tolerance: no change, a tie."""
    src = single([0.7, 0.2, 0.1])
    mut = single([0.45 + m / 2, 0.45 - m / 2, 0.1])
    chk = R.mr2_single(src, mut)
    changed = m < -TOL
    assert (chk.verdict, chk.label_changed, chk.tie) == (VIOLATED if changed else HOLDS, changed, within)
    if m == -TOL / 2:
        assert mut.top1 == 1  # the argmax alone would have called it a change


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_single_label_mr1_holds_only_when_the_certainty_falls_by_more_than_the_tolerance(m, beyond, within):
    """Source [0.6, 0.3, 0.1]: certainty 0.3.  Mutant certainty 0.3 - m (top label kept): MR-1 holds only when
    the fall m is beyond the tolerance; a fall or rise within it is a tie, violated (no fall)."""
    src = single([0.6, 0.3, 0.1])
    mut = single([0.6 - m / 2, 0.3 + m / 2, 0.1])
    chk = R.mr1_single(src, mut)
    assert chk.source_certainty == pytest.approx(0.3)
    assert chk.mutant_certainty == pytest.approx(0.3 - m, abs=1e-12)
    assert (chk.verdict, chk.label_changed, chk.tie) == (HOLDS if beyond else VIOLATED, False, within)


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_single_label_mr1_counts_a_label_change_only_beyond_the_tolerance(m, beyond, within):
    """Source [0.5 + tol/4, 0.5 - tol/4, 0]: certainty tol/2, already a near tie.  On the mutant label 0 leads
    label 1 by ``m``: only m = -2 tol is a label change (holds); otherwise the certainty |m| cannot fall by
    more than the tolerance from tol/2, so MR-1 is violated: a tie for |m| within the tolerance, a clear rise
    of the certainty at m = 2 tol."""
    src = single([0.5 + TOL / 4, 0.5 - TOL / 4, 0.0])
    mut = single([0.5 + m / 2, 0.5 - m / 2, 0.0])
    chk = R.mr1_single(src, mut)
    changed = m < -TOL
    assert (chk.verdict, chk.label_changed) == (HOLDS if changed else VIOLATED, changed)
    assert chk.tie == within


def multi(p) -> R.Prediction:
    return R.Prediction.from_probs(p, "multi", interest=(0, 1, 2))


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_multi_label_set_changes_only_when_a_label_crosses_the_threshold_by_more_than_the_tolerance(m, beyond,
                                                                                                    within):
    """Label 1 sits on the threshold (p = 0.5, predicted) on the source and at 0.5 + m on the mutant: it leaves
    the set at m < 0, but only a move beyond the tolerance changes the set (MR-2 violated); -tol/2 is a tie."""
    src = multi([0.9, 0.5, 0.1])
    mut = multi([0.9, 0.5 + m, 0.1])
    chk = R.mr2_multi(src, mut)
    changed = m < -TOL
    crossed_within = -TOL <= m < 0
    assert (chk.verdict, chk.label_changed, chk.tie) == (VIOLATED if changed else HOLDS, changed, crossed_within)
    if m == -TOL / 2:
        assert mut.predicted == (0,)  # the threshold alone would have called the sets different


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_multi_label_mr1_holds_only_when_every_certainty_falls_by_more_than_the_tolerance(m, beyond, within):
    """Source [0.9, 0.8, 0.1]: certainties |2p - 1| = 0.8 and 0.6.  On the mutant label 0's certainty falls by
    ``m`` and label 1's by 0.2: the smallest fall is m, which decides."""
    src = multi([0.9, 0.8, 0.1])
    mut = multi([0.9 - m / 2, 0.7, 0.1])
    chk = R.mr1_multi(src, mut)
    assert (chk.verdict, chk.label_changed, chk.tie) == (HOLDS if beyond else VIOLATED, False, within)


def record(iou: float, label: str = "cat") -> RecordMatch:
    return RecordMatch(0, label, 0.9, iou, (0.0, 0.0, 1.0, 1.0))


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_iou_test_reaches_the_threshold_within_the_tolerance_below_it(m, beyond, within):
    """T = 1 when IoU >= Delta_c (0.3); an IoU within the tolerance below it reaches it, as an exact tie does."""
    match = record(0.3 + m)
    assert iou_test(match, "cat", 0.3) == int(m >= -TOL)
    assert iou_tie(match, "cat", 0.3) == within
    assert iou_test(record(0.3 + m, "dog"), "cat", 0.3) == 0 and not iou_tie(record(0.3 + m, "dog"), "cat", 0.3)


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_detection_checks_read_t_with_the_tolerance_and_say_when_it_was_a_tie(m, beyond, within):
    """Source record at IoU 0.9 (T = 1); the mutant's record at IoU 0.3 + m against Delta_c 0.3."""
    src, mut = record(0.9), record(0.3 + m)
    detected = m >= -TOL
    mr1, mr2 = check_mr1(src, mut, "cat", 0.3), check_mr2(src, mut, "cat", 0.3)
    assert (mr1.verdict, mr1.t_mutant, mr1.tie) == (VIOLATED if detected else HOLDS, int(detected), within)
    assert (mr2.verdict, mr2.t_mutant, mr2.tie) == (HOLDS if detected else VIOLATED, int(detected), within)


def two_boxes(second_bottom: float) -> Detections:
    """Two 'cat' records against the object (0, 0, 100, 100): IoU 0.99 for the first, (second_bottom / 100)
    for the second."""
    return Detections(((0.0, 0.0, 100.0, 99.0), (0.0, 0.0, 100.0, second_bottom)), ("cat", "cat"), (0.9, 0.8))


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_the_record_nearest_an_object_is_the_earlier_one_unless_another_is_beyond_the_tolerance(m, beyond, within):
    """The second record's IoU is the first's (0.99) plus ``m``: it is chosen only when it leads by more
    than the tolerance; a lead within it is a tie, which goes to the earlier (surer) record."""
    dets = two_boxes(99.0 + 100 * m)
    got = match_record(dets, (0.0, 0.0, 100.0, 100.0))
    assert got.index == (1 if beyond else 0)
    assert got.iou == pytest.approx(0.99 + (m if beyond else 0.0), abs=1e-12)


@pytest.mark.parametrize("m, beyond, within", MARGINS)
def test_the_associated_object_is_the_lower_index_unless_another_is_beyond_the_tolerance(m, beyond, within):
    """One 'cat' record (0, 0, 100, 99) and two 'cat' objects: the first at IoU 0.99, the second at
    0.99 + ``m`` (a taller box).  The second wins only by more than the tolerance."""
    objects = (TargetObject("cat", None, (0.0, 0.0, 100.0, 100.0)),
               TargetObject("cat", None, (0.0, 0.0, 100.0, 99.0 / (0.99 + m))))
    (a,) = associated_objects(Detections(((0.0, 0.0, 100.0, 99.0),), ("cat",), (0.9,)), objects)
    assert a.object == (1 if beyond else 0)
