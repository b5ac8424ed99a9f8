"""A detector whose output never changes cannot be caught changing it: DetReport s4.4's test T is one function
of (image output, ground-truth object) and the engine applies it alike to the source and to every mutant.

The detector below reports the same three records on every image.  On the scene, two red objects overlap
(O0 and O2) and a blue one stands apart:

* record r0, red (4, 4, 20, 20), score 0.9: IoU 1 with O0, 0.6 with O2, so O0 is its Associated Object;
* record r1, blue (8, 26, 26, 44), score 0.8: IoU 1 with the blue object;
* record r2, red (14, 4, 30, 20), score 0.5: IoU 96/416 = 0.23 with O0 and 72/440 = 0.16 with O2, so O0
  (below Delta_c = 0.3 on its own record);
* O2 has no record of its own (r0 prefers O0): unit o1.

Per object the best record of its label is the same on every image: r0 for O0 (IoU 1) and for O2 (IoU 0.6),
r1 for the blue one, so T is 1 for every unit on the source and on every mutant.  MR-2 (the object kept,
the background changed) must therefore hold everywhere, and MR-1 (the object removed) must be violated
everywhere: the detector never looks at the object.
"""

from __future__ import annotations

import pytest

from objrel.config import DetectionConfig
from objrel.engine.detect import DetectionEngine
from objrel.models.detector import CallableDetector
from objrel.relations import common as C
from objrel.relations.detect import INCORRECT_DETECTION, KEPT, STILL_DETECTED
from objrel.store import detections as D

from tests.fixtures.detection_support import LABELS, write_scenes

RECORDS = ([(4, 4, 20, 20), (8, 26, 26, 44), (14, 4, 30, 20)], ["red", "blue", "red"], [0.9, 0.8, 0.5])
O0, O2, BLUE = (4, 4, 20, 20), (4, 8, 20, 24), (8, 26, 26, 44)
SCENE = {"name": "overlap.png", "objects": [("red", O0), ("red", O2), ("blue", BLUE)]}
UNITS = ["1/r0", "1/r1", "1/r2", "1/o1"]


def constant_detector() -> CallableDetector:
    """The same three records for every image, whatever it shows."""
    return CallableDetector(lambda images: [RECORDS for _ in images], labels=LABELS, name="constant")


@pytest.fixture
def constant_run(tmp_path, store):
    ann = write_scenes(tmp_path / "scene", [SCENE])
    cfg = DetectionConfig(detector="constant", dataset=str(ann), plan="colours3")
    report = DetectionEngine(store, cfg, detector=constant_detector()).execute()
    return store, report.run_id


def test_a_constant_detector_never_violates_mr2_and_no_unit_is_flagged_by_it(constant_run):
    store, run_id = constant_run
    units = {u.unit_id: u for u in D.units(store, run_id)}
    assert list(units) == UNITS
    mr2 = [v for v in D.verdicts(store, run_id) if v.relation == "MR-2"]
    assert len(mr2) == 3 * len(UNITS)
    assert [(v.unit_id, v.outcome) for v in mr2 if v.verdict == C.VIOLATED] == []
    assert not any(v.outcome == INCORRECT_DETECTION for v in mr2)
    flagged_mr2 = [v["sample_id"] for v in store.votes(run_id)
                   if v["is_primary"] and v["relation"] == "MR-2" and v["flagged"]]
    assert flagged_mr2 == []
    assert {v.outcome for v in mr2} == {KEPT}
    assert all(u.tested and u.t_source == 1 for u in units.values())


def test_a_constant_detector_violates_mr1_on_every_unit_it_detects(constant_run):
    store, run_id = constant_run
    mr1 = [v for v in D.verdicts(store, run_id) if v.relation == "MR-1"]
    assert len(mr1) == 3 * len(UNITS)
    assert {v.outcome for v in mr1} == {STILL_DETECTED}
    flagged_mr1 = sorted(v["sample_id"] for v in store.votes(run_id)
                         if v["is_primary"] and v["relation"] == "MR-1" and v["flagged"])
    assert flagged_mr1 == sorted(UNITS)


def test_a_constant_detector_scores_fully_preserved_and_never_removed(constant_run):
    """ORMR s V-B's D compares the record nearest the Associated Object on the source with the one nearest
    it on the mutant; with nothing changing, the preserving distance is 1 and the removing one 0 for every
    unit, so S_p = 1, S_r = 0 and S = 0.5."""
    store, run_id = constant_run
    for u in D.units(store, run_id):
        assert (u.s_p, u.s_r, u.s) == (1.0, 0.0, 0.5), u.unit_id
