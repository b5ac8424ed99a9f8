"""The Review page and review items for detection runs: boxes before and after mutation, IoUs, outcomes;
and the demo's detection runs with the real OpenCV and MTCNN detectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from objrel import review
from objrel.config import DetectionConfig
from objrel.engine.detect import DetectionEngine
from objrel.review.items import DETECTION_RGB, MATCHED_RGB, OUTLINE_RGB, draw_detections, review_item
from objrel.store import Store
from objrel.store import detections as D

from tests.fixtures.detection_support import bright_context_detector, write_scenes

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "review.py")
# Two red squares on a gray-200 background; the detector needs a bright context.  Units (by score):
# r0 = the 20x20 square B, r1 = the 16x16 square A.  MR-2: black and gray backgrounds hide them (missing
# detections), white keeps them -> both flagged; MR-1 holds everywhere (see test_detection_engine).
A, B = (4, 4, 20, 20), (30, 4, 50, 24)


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    if hasattr(review.accounts, "SCRYPT_N"):
        monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)

@pytest.fixture
def detection_store(tmp_path):
    ann = write_scenes(tmp_path / "s", [{"name": "b.png", "background": 200, "objects": [("red", A), ("red", B)]}])
    store = Store(tmp_path / "det.db")
    rep = DetectionEngine(store, DetectionConfig(detector="bright", dataset=str(ann), plan="colours3",
                                                 name="bright-context detector"),
                          detector=bright_context_detector()).execute()
    yield store, rep.run_id
    store.dispose()


def test_review_item_draws_ground_truth_and_detections_before_and_after(detection_store):
    store, run_id = detection_store
    item = review_item(store, run_id, "1/r0", "MR-2")
    assert item.task == "detection" and item.ground_truth == ["red"] and item.size == (64, 48)
    src = item.source.image
    # unit r0: its record is exactly box B (magenta over the gold object box); the other record, A, in blue
    assert tuple(src[14, 30]) == MATCHED_RGB
    assert tuple(src[12, 4]) == DETECTION_RGB
    assert item.source.top == [("red", 0.4)] and item.source.source_certainty == 1.0
    assert [d["compared"] for d in item.source.detections] == [True, False]
    assert item.source.detections[1]["IoU with object"] == 0.0
    panels = {p.key: p for p in item.mutants}
    assert [p.key for p in item.mutants][:3] == ["fill_background(colour=black)", "fill_background(colour=gray)",
                                                  "fill_background(colour=white)"]
    black = panels["fill_background(colour=black)"]
    # after mutation: nothing detected, only the gold object box is drawn on the black background
    assert (black.verdict, black.note, black.mutant_certainty, black.top) == ("violated", "missing detection",
                                                                              0.0, [])
    assert tuple(black.image[14, 30]) == OUTLINE_RGB and tuple(black.image[30, 10]) == (0, 0, 0)
    white = panels["fill_background(colour=white)"]
    assert (white.verdict, white.note, white.mutant_certainty) == ("holds", "kept", 1.0)
    assert tuple(white.image[14, 30]) == MATCHED_RGB
    assert panels["fill_object(colour=gray)"].note == "removed"


def test_draw_detections_leaves_the_input_alone():
    img = np.zeros((20, 20, 3), np.uint8)
    out = draw_detections(img, (2, 2, 10, 10), {"boxes": [[12, 12, 18, 18]], "labels": ["x"], "scores": [1.0]}, None)
    assert img.max() == 0 and tuple(out[5, 2]) == OUTLINE_RGB and tuple(out[15, 12]) == DETECTION_RGB
    compared = draw_detections(img, None, {"boxes": [[12, 12, 18, 18]], "labels": ["x"], "scores": [1.0]}, 0)
    assert tuple(compared[15, 12]) == MATCHED_RGB


def _review_as_dana(store, monkeypatch) -> AppTest:
    """The Review page on ``store``'s whole queue, signed in as a new reviewer, dana."""
    review.create_reviewer(store, "dana", "dana-passphrase")
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["reviewer"] = "dana"
    at.query_params["queue"] = "all"
    at.run()
    assert not at.exception, at.exception
    return at


def test_review_page_shows_a_detection_unit_and_records_a_judgment(monkeypatch, detection_store):
    store, run_id = detection_store
    at = _review_as_dana(store, monkeypatch)
    assert at.query_params["item"] == "1/r0" and at.query_params["relation"] == "MR-2"
    assert any("(sample 1/r0)" in s.value.replace("\\", "") for s in at.subheader)   # shown: escapes read
    # the first screen: the source and the two MR-2 mutants that violated; the evidence panel under it: the
    # source and all 3 MR-2 + 3 MR-1 mutants, no box-redraw preview
    assert len(at.get("image")) == 3 + 7
    md = " ".join(m.value for m in at.markdown)
    assert md.count("missing detection") == 2 * 2 and "IoU with the object 1.000 -> 0.000" in md
    assert "removed" in md and "certainty" not in md.replace("IoU with the object", "")
    at.session_state["review_evidence"] = "lime"
    at.run()
    captions = " ".join(c.value for c in at.caption)
    assert "not available for detection runs" in captions
    next(b for b in at.button if b.key and b.key.startswith("judge_tp_")).click().run()
    assert not at.exception
    js = review.judgments(store, run_id, "MR-2", reviewer="dana")
    assert [(j.sample_id, j.verdict) for j in js] == [("1/r0", "tp")]
    assert at.query_params["item"] == "1/r1"


@pytest.mark.slow
def test_demo_detection_runs_with_opencv_and_mtcnn(tmp_path, monkeypatch):
    """The demo's detection runs over the first four demo photos (Chelsea, coffee, cameraman, Grace Hopper):
    the Haar cascades find Grace Hopper's face and miss the cameraman's and Chelsea's cat face; MTCNN finds
    both human faces and skips Chelsea (no human face); background noise never loses a found face."""
    from objrel import demo

    monkeypatch.setattr(demo, "detection_demo_runs",
                        lambda orig=demo.detection_demo_runs: tuple(c.replace(limit=4) for c in orig()))
    monkeypatch.setattr(demo, "detection_demo_sweeps", lambda orig=demo.detection_demo_sweeps: tuple(
        (c.replace(limit=4), op) for c, op in orig()))
    store = demo.build_detection_demo(Store(tmp_path / "demo.db"), log=open("/dev/null", "w"))
    sweep = store.list_runs()[2]
    runs = {r.model: r for r in store.list_runs()[:2]}
    assert set(runs) == {"haar:frontalface_default+haar:frontalcatface", "mtcnn"}
    assert all(r.status == "finished" and r.task == "detection" for r in runs.values())
    haar = D.units(store, runs["haar:frontalface_default+haar:frontalcatface"].id, tested=True)
    assert {u.unit_id: u.detected for u in haar} == {"1/o0": False, "3/o0": False, "4/r0": True}
    mtcnn = D.units(store, runs["mtcnn"].id)
    assert {u.unit_id for u in mtcnn if u.detected} == {"3/r0", "4/r0"}
    for r in runs.values():
        bg = [v for v in D.verdicts(store, r.id) if v.operator == "background_noise" and v.iou_source]
        assert bg and all(v.outcome == "kept" for v in bg)
    # the sweep: erasing the centre 10% of a face leaves MTCNN finding it (flagged), 30% or more never does
    from objrel.engine.sweep import sweep_table

    rows = {r.value: r for r in sweep_table(store, sweep.id).rows}
    assert (rows[0.1].units, rows[0.1].still_detected) == (2, 2)
    assert all(rows[v].still_detected == 0 for v in (0.3, 0.5, 0.7, 0.9))
    assert store.flagged_sample_ids(sweep.id, "MR-1")
    # a second build finds the runs and adds nothing
    demo.build_detection_demo(store, log=open("/dev/null", "w"))
    assert len(store.list_runs()) == 3


def test_box_only_flag_stands_under_the_score_and_its_caption_says_why(monkeypatch, detection_store):
    """The scenes' objects are boxes without masks, so S_p / S_r carry the box-only flag.  Written inside the
    value ("0.778 (box-only)") it ran into the next metric at 1,400 and 900 px (seen in a browser): the value
    is the number alone and the flag is the metric's delta, explained in a caption under the row."""
    store, run_id = detection_store
    item = review_item(store, run_id, "1/r0", "MR-2")
    assert item.box_only and item.s_r is not None
    at = _review_as_dana(store, monkeypatch)
    scores = {m.label: m for m in at.metric if m.label in ("S_p", "S_r")}
    assert scores["S_r"].value == f"{item.s_r:.3f}", scores["S_r"].value
    assert scores["S_r"].delta == "box-only"
    assert "RmvObjByMM needs a mask" in " ".join(c.value for c in at.caption)


def test_box_only_caption_shows_when_the_item_has_s_r_but_no_s(monkeypatch, detection_store):
    """A run whose plan has no object-preserving group (the demo's random-erase sweep, run 5) stores S_r but no S:
    the flag stood beside S_r with nothing on the page saying what it means."""
    store, run_id = detection_store
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE detection_units SET s_p = NULL, s = NULL WHERE run_id = ?", (run_id,))
    at = _review_as_dana(store, monkeypatch)
    scores = {m.label: m for m in at.metric if m.label in ("S_p", "S_r")}
    assert scores["S_r"].delta == "box-only" and not scores["S_p"].delta
    assert "RmvObjByMM needs a mask" in " ".join(c.value for c in at.caption)
