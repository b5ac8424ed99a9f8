"""IoU, the Associated Object and detection units, on boxes computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.data.sample import TargetObject
from objrel.data.detections import Detections
from objrel.relations.associate import RecordMatch, associated_objects, detection_units, iou, iou_matrix, match_record
from objrel.models.detector import as_detections


def obj(label, box):
    return TargetObject(label, None, box)


def test_iou_of_hand_made_boxes():
    a = (0, 0, 10, 10)
    assert iou(a, a) == 1.0
    # 5x5 overlap of two 10x10 boxes: 25 / (100 + 100 - 25)
    assert iou(a, (5, 5, 15, 15)) == pytest.approx(25 / 175)
    # a box inside another: 4x4 / 10x10
    assert iou(a, (2, 2, 6, 6)) == pytest.approx(0.16)
    # touching edges (x2 exclusive) and disjoint boxes do not overlap
    assert iou(a, (10, 0, 20, 10)) == 0.0
    assert iou(a, (30, 30, 40, 40)) == 0.0
    # exactly the seed 001 threshold: a 3x10 strip of a 10x10 box
    assert iou(a, (0, 0, 3, 10)) == pytest.approx(0.3)
    # a box without area never overlaps
    assert iou(a, (5, 5, 5, 8)) == 0.0


def test_iou_matrix_matches_pairwise_iou():
    a = [(0, 0, 10, 10), (5, 5, 15, 15)]
    b = [(0, 0, 10, 10), (2, 2, 6, 6), (100, 100, 110, 110)]
    m = iou_matrix(a, b)
    assert m.shape == (2, 3)
    # (5..6)x(5..6) = 1 px shared by the 10x10 box and the 4x4 box: 1 / (100 + 16 - 1)
    expected = np.array([[1.0, 0.16, 0.0], [25 / 175, 1 / 115, 0.0]])
    assert np.allclose(m, expected)
    assert iou_matrix([], b).shape == (0, 3)


def test_associated_object_picks_the_same_label_object_with_the_highest_iou():
    """Two faces and a cat face; the cat face lies exactly where face A is."""
    objects = [obj("face", (0, 0, 10, 10)), obj("face", (20, 0, 30, 10)), obj("cat face", (0, 0, 10, 10))]
    det = Detections(
        boxes=((2, 0, 12, 10),      # face: 8x10 with A -> 80 / 120; nothing with B
               (18, 0, 28, 10),     # face: 8x10 with B -> 80 / 120
               (2, 0, 12, 10),      # cat face: only the cat-face object competes, 80 / 120
               (0, 0, 10, 10),      # dog: no object of its label
               (50, 50, 60, 60)),   # face far from every face: IoU 0 -> no associated object
        labels=("face", "face", "cat face", "dog", "face"),
        scores=(0.9, 0.8, 0.7, 0.6, 0.5))
    assoc = associated_objects(det, objects)
    assert [(a.record, a.object) if a else None for a in assoc] == [(0, 0), (1, 1), (2, 2), None, None]
    assert assoc[0].iou == pytest.approx(2 / 3) and assoc[1].iou == pytest.approx(2 / 3)


def test_tie_between_two_objects_goes_to_the_first():
    objects = [obj("face", (0, 0, 10, 10)), obj("face", (10, 0, 20, 10))]
    det = Detections(((5, 0, 15, 10),), ("face",), (0.9,))  # 5x10 with each: 50 / 150
    (a,) = associated_objects(det, objects)
    assert (a.object, a.iou) == (0, pytest.approx(1 / 3))


def test_match_record_takes_the_highest_iou_of_any_label():
    det = Detections(((0, 0, 10, 10), (1, 0, 11, 10), (40, 40, 50, 50)), ("face", "cat face", "face"),
                     (0.9, 0.8, 0.7))
    m = match_record(det, (1, 0, 11, 10))
    assert (m.index, m.label, m.score, m.iou) == (1, "cat face", 0.8, 1.0)
    # nothing overlaps: an empty match with IoU 0
    assert match_record(det, (100, 100, 110, 110)) == RecordMatch()
    assert match_record(Detections(), (0, 0, 5, 5)).found is False


def test_units_of_an_image_with_several_objects_of_one_label():
    """Three faces annotated; the detector finds face 2 twice and face 0 once and misses face 1."""
    objects = [obj("face", (0, 0, 10, 10)), obj("face", (20, 0, 30, 10)), obj("face", (40, 0, 50, 10))]
    det = Detections(((40, 0, 50, 10), (0, 0, 10, 5), (41, 0, 50, 10)), ("face",) * 3, (0.95, 0.9, 0.6))
    units = detection_units(det, objects)
    assert [(u.key, u.object) for u in units] == [("r0", 2), ("r1", 0), ("r2", 2), ("o1", 1)]
    assert units[1].source.iou == pytest.approx(0.5)      # half of face 0
    assert units[2].source.iou == pytest.approx(0.9)      # 9 of 10 columns of face 2
    assert units[3].source == RecordMatch() and units[3].label == "face"


def test_detections_validate_and_round_trip():
    d = Detections(((1.5, 2, 10, 12.25),), ("face",), (0.75,))
    assert Detections.from_dict(d.to_dict()) == d
    with pytest.raises(ValueError, match="one label and one score per box"):
        Detections(((0, 0, 1, 1),), (), (0.5,))
    with pytest.raises(ValueError, match="not xyxy"):
        Detections(((10, 0, 5, 5),), ("face",), (0.5,))
    # sorted by score, thresholded, clipped to a 20x10 image (the second box leaves it entirely)
    d = Detections(((-5, -5, 5, 5), (30, 0, 40, 5), (0, 0, 20, 10)), ("a", "b", "c"), (0.2, 0.9, 0.5))
    assert d.sorted().labels == ("b", "c", "a")
    assert d.above(0.5).labels == ("b", "c")
    assert d.clipped(20, 10).boxes == ((0.0, 0.0, 5.0, 5.0), (0.0, 0.0, 20.0, 10.0))


def test_as_detections_accepts_dicts_tuples_and_integer_labels():
    d = as_detections({"boxes": np.array([[0, 0, 4, 4]], dtype=object), "labels": [1], "scores": [0.5]},
                      labels=["background", "face"])
    assert d.labels == ("face",) and d.boxes == ((0.0, 0.0, 4.0, 4.0),)
    assert as_detections(([[1, 1, 2, 2]], ["cat"], [1.0])).labels == ("cat",)
    with pytest.raises(ValueError, match="needs the detector's label list"):
        as_detections(([[1, 1, 2, 2]], [3], [1.0]))
    with pytest.raises(ValueError, match="missing"):
        as_detections({"boxes": []})


def test_match_record_of_a_label_skips_better_overlapping_records_of_other_labels():
    det = Detections(((0, 0, 10, 10), (1, 0, 11, 10), (40, 40, 50, 50)), ("face", "cat face", "face"),
                     (0.9, 0.8, 0.7))
    m = match_record(det, (1, 0, 11, 10), "face")               # "cat face" fits exactly; "face" r0 at 9/11
    assert (m.index, m.label, m.iou) == (0, "face", pytest.approx(9 / 11))
    assert match_record(det, (1, 0, 11, 10), "dog") == RecordMatch()  # no record of that label
