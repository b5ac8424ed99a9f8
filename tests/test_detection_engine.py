"""Detection runs end to end with hand-written detectors whose every verdict is worked out by hand."""

from __future__ import annotations

import pytest

from objrel.analysis import studies as analysis
from objrel.data import load_coco
from objrel.config import DetectionConfig
from objrel.engine.detect import DetectionEngine, image_of, unit_id
from objrel.data.detector_regions import detector_regions, image_folder
from objrel.models.detector import load_detector
from objrel.mutations.rebuild import rebuild_mutant
from objrel.analysis.summary import summarize
from objrel.store import Store

from .test_detection_support import (A, B, C, TWO_RED_ONE_BLUE, ColourDetector, bright_context_detector,
                                     dark_context_detector, stuck_detector, write_scenes)

VOLATILE = {"id", "run_id", "elapsed_ms"}


def run(store, ann, detector, **kw):
    cfg = DetectionConfig(detector=detector.name, dataset=str(ann), plan=kw.pop("plan", "colours3"), **kw)
    engine = DetectionEngine(store, cfg, detector=detector)
    return engine, engine.execute()


def by_id(store, run_id):
    return {s["sample_id"]: s for s in store.samples(run_id)}


def votes(store, run_id):
    return {(v["sample_id"], v["relation"]): v for v in store.votes(run_id) if v["is_primary"]}


def test_object_relevant_detector_holds_both_relations_for_each_object(tmp_path, store):
    """Two red squares and a blue one, each found exactly (IoU 1).  Filling a unit's own object black, gray
    or white removes its component: T 1 -> 0, MR-1 holds.  Filling everything *but* that object (the other
    squares included) leaves its component: T stays 1, MR-2 holds.  Records come by score (pixels / 1000):
    B 0.400, C 0.324, A 0.256."""
    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE, {"name": "empty.png", "objects": [], "annotate": False},
                                        {"name": "green.png", "objects": [("green", (2, 2, 9, 9))]}])
    _, report = run(store, ann, ColourDetector())
    rows = by_id(store, report.run_id)
    assert sorted(rows) == ["1/r0", "1/r1", "1/r2", "2", "3"]
    assert [rows[f"1/r{j}"]["objects"][0]["box"] for j in range(3)] == [list(B), list(C), list(A)]
    assert [rows[f"1/r{j}"]["gt_categories"] for j in range(3)] == [["red"], ["blue"], ["red"]]
    assert rows["2"]["skip_code"] == "empty-region"
    assert rows["3"]["skip_code"] == "unknown-label" and "green" in rows["3"]["skip_reason"]
    v = votes(store, report.run_id)
    for j in range(3):
        u = rows[f"1/r{j}"]
        assert u["status"] == "tested" and u["correct"] is True
        assert (u["s_p"], u["s_r"], u["s"]) == (1.0, 1.0, 1.0)
        assert v[(f"1/r{j}", "MR-1")]["violations"] == 0 and v[(f"1/r{j}", "MR-2")]["violations"] == 0
    notes = {(x["sample_id"], x["mutation_key"]): x["note"] for x in store.verdicts(report.run_id)}
    assert notes[("1/r2", "fill_object(colour=gray)")] == "removed"
    assert notes[("1/r2", "fill_background(colour=black)")] == "kept"
    # the region of unit r2 is object A alone: its area share of the 64x48 image
    assert rows["1/r2"]["area_ratio"] == pytest.approx(16 * 16 / (64 * 48))
    run_rec = store.get_run(report.run_id)
    assert (run_rec.task, run_rec.n_total, run_rec.n_done, run_rec.n_tested, run_rec.n_skipped) == (
        "detection", 3, 3, 3, 2)
    assert store.class_names(report.run_id) == ["red", "blue"]
    # the stored record of the source: every detection, the compared one and test T
    src = store.predictions(report.run_id, "1/r2")["source"]["prediction"]
    assert src["detections"]["labels"] == ["red", "blue", "red"] and src["record"]["index"] == 2
    assert (src["t"], src["record"]["iou"], src["predicted"], src["top_probs"]) == (1, 1.0, [0], [0.256])


def test_detector_that_ignores_the_object_violates_mr1_and_misses_are_units(tmp_path, store):
    """A detector stuck on (4, 4, 20, 20): unit r0 is tied to A (IoU 1).  Filling A leaves the box where it was:
    T stays 1, MR-1 violated 3 of 3, flagged; MR-2 holds.  B and C are never found: units o1, o2 with T 0,
    MR-1 n/a (nothing to remove), MR-2 holds (still missed).  S_r of r0 is 0 (IoU never dropped), S_p 1."""
    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE])
    _, report = run(store, ann, stuck_detector())
    rows = by_id(store, report.run_id)
    assert sorted(rows) == ["1/o1", "1/o2", "1/r0"]
    assert (rows["1/r0"]["correct"], rows["1/o1"]["correct"], rows["1/o2"]["correct"]) == (True, False, False)
    assert rows["1/o1"]["objects"][0]["box"] == list(B) and rows["1/o2"]["gt_categories"] == ["blue"]
    v = votes(store, report.run_id)
    assert (v[("1/r0", "MR-1")]["violations"], v[("1/r0", "MR-1")]["flagged"]) == (3, True)
    assert v[("1/r0", "MR-2")]["flagged"] is False
    assert (v[("1/o1", "MR-1")]["applicable"], v[("1/o1", "MR-1")]["flagged"]) == (0, False)
    assert v[("1/o1", "MR-2")]["violations"] == 0
    assert (rows["1/r0"]["s_p"], rows["1/r0"]["s_r"], rows["1/r0"]["s"]) == (1.0, 0.0, 0.5)
    assert rows["1/o1"]["s_p"] is None
    notes = {(x["sample_id"], x["mutation_key"]): x["note"] for x in store.verdicts(report.run_id)}
    assert notes[("1/r0", "fill_object(colour=white)")] == "still detected"
    assert notes[("1/o1", "fill_object(colour=white)")] == "not detected on the source"
    assert notes[("1/o2", "fill_background(colour=gray)")] == "still missed"
    # no MR-1 mutant was made for an undetected unit
    assert store.predictions(report.run_id, "1/o1")["fill_object(colour=black)"]["prediction"] is None
    s = summarize(store, report.run_id)
    assert (s.evaluated, s.correct, s.mr1, s.mr2) == (3, 1, 1, 0)


def test_background_driven_detector_gives_missing_detections(tmp_path, store):
    """Found only when the median gray is >= 150.  Source background 200: both squares found.  For each
    unit, a black (median 0) or gray (127) background hides it: T 1 -> 0, a missing detection; a white one
    (255) keeps it.  MR-2 violated 2 of 3 -> flagged.  Filling the unit's own square leaves the median at 200
    and the other square found, but nothing overlaps the filled one: MR-1 holds."""
    ann = write_scenes(tmp_path / "s", [{"name": "b.png", "background": 200,
                                         "objects": [("red", (4, 4, 20, 20)), ("red", (30, 4, 50, 24))]}])
    _, report = run(store, ann, bright_context_detector())
    v = votes(store, report.run_id)
    assert sorted(by_id(store, report.run_id)) == ["1/r0", "1/r1"]
    for u in ("1/r0", "1/r1"):
        assert (v[(u, "MR-2")]["violations"], v[(u, "MR-2")]["flagged"]) == (2, True)
        assert v[(u, "MR-1")]["violations"] == 0
    notes = [x["note"] for x in store.verdicts(report.run_id) if x["relation"] == "MR-2"]
    assert sorted(notes) == ["kept", "kept", "missing detection", "missing detection", "missing detection",
                             "missing detection"]
    s = summarize(store, report.run_id)
    assert (s.correct, s.mr1, s.mr2, s.both) == (2, 0, 2, 0)


def test_incorrect_detections_need_the_missed_objects(tmp_path, store):
    """Found only when the median gray is < 150, on a background of 200: nothing on the source, so both
    squares are units o0 and o1 (T 0).  A black or gray background makes the unit's square appear (T 0 -> 1):
    an incorrect detection; white keeps it hidden.  2 of 3 -> flagged.  With detected_only they are untested."""
    scene = {"name": "b.png", "background": 200, "objects": [("red", (4, 4, 20, 20)), ("red", (30, 4, 50, 24))]}
    ann = write_scenes(tmp_path / "s", [scene])
    _, report = run(store, ann, dark_context_detector())
    v = votes(store, report.run_id)
    for u in ("1/o0", "1/o1"):
        assert (v[(u, "MR-2")]["violations"], v[(u, "MR-2")]["flagged"]) == (2, True)
    incorrect = [x for x in store.verdicts(report.run_id) if x["note"] == "incorrect detection"]
    assert len(incorrect) == 4 and all(x["mutant_certainty"] == 1.0 for x in incorrect)
    s = summarize(store, report.run_id)
    assert (s.correct, s.mr2, s.flagged_all_mr2) == (0, 0, 2)   # flagged, but not among correct inferences

    only = Store(tmp_path / "only.db")
    _, rep2 = run(only, ann, dark_context_detector(), detected_only=True)
    assert [r["status"] for r in only.samples(rep2.run_id)] == ["untested", "untested"]
    assert only.verdicts(rep2.run_id) == []


def test_erase_noise_plan_on_the_stuck_detector(tmp_path, store):
    """The default plan: random erase 0.5 / 0.7 / 0.9 of A's box leaves the stuck record: MR-1 2 of 3 ->
    flagged; background and object noise keep it: MR-2 holds."""
    ann = write_scenes(tmp_path / "s", [{"name": "one.png", "objects": [("red", A)]}])
    _, report = run(store, ann, stuck_detector(), plan="erase_noise")
    v = votes(store, report.run_id)
    assert v[("1/r0", "MR-1")]["group_name"] == "MR-1 random erase"
    assert (v[("1/r0", "MR-1")]["violations"], v[("1/r0", "MR-1")]["flagged"]) == (3, True)
    assert (v[("1/r0", "MR-2")]["group_name"], v[("1/r0", "MR-2")]["violations"]) == ("MR-2 background noise", 0)


def test_mutants_rebuild_from_the_store_and_runs_are_deterministic(tmp_path):
    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE])
    a, b = Store(tmp_path / "a.db"), Store(tmp_path / "b.db")
    ea, ra = run(a, ann, ColourDetector(), plan="erase_noise")
    _, rb = run(b, ann, ColourDetector(), plan="erase_noise")

    def rows(st, rid):
        return sorted(repr({k: v for k, v in r.items() if k not in VOLATILE})
                      for r in st.samples(rid) + st.verdicts(rid) + st.votes(rid))

    assert rows(a, ra.run_id) == rows(b, rb.run_id)
    # the exact mutant the run fed to the detector: same detections as stored
    rebuilt = rebuild_mutant(a, ra.run_id, "1/r2", "random_erase(ratio=0.5)")
    stored = a.predictions(ra.run_id, "1/r2")["random_erase(ratio=0.5)"]["prediction"]["detections"]
    redone = ea.detector.detect([rebuilt.mutant])[0]
    assert redone.to_dict() == stored


def test_resume_after_a_stop_matches_an_uninterrupted_run(tmp_path):
    scenes = [dict(TWO_RED_ONE_BLUE, name=f"s{i}.png") for i in range(4)]
    ann = write_scenes(tmp_path / "s", scenes)
    full = Store(tmp_path / "full.db")
    _, rf = run(full, ann, ColourDetector(), batch_size=2)
    part = Store(tmp_path / "part.db")
    eng = DetectionEngine(part, DetectionConfig(detector="colour", dataset=str(ann), plan="colours3", batch_size=2),
                          detector=ColourDetector())
    first = eng.execute(stop_after=1)
    assert first.status == "pending" and {image_of(s["sample_id"]) for s in part.samples(first.run_id)} == {"1"}
    second = eng.execute(run_id=first.run_id)
    third = eng.execute(run_id=first.run_id)
    assert (second.status, second.processed, third.processed) == ("finished", 3, 0)
    strip = lambda st, rid: sorted(repr({k: v for k, v in r.items() if k not in VOLATILE})  # noqa: E731
                                   for r in st.samples(rid) + st.verdicts(rid) + st.votes(rid))
    assert strip(part, first.run_id) == strip(full, rf.run_id)
    assert part.get_run(first.run_id).n_done == 4


def test_per_label_and_size_views_work_for_detection_runs(tmp_path, store):
    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE])
    _, report = run(store, ann, stuck_detector())
    per = analysis.per_label(store, report.run_id)
    assert per[["class_name", "correct", "mr1", "mr2"]].to_dict("records") == [
        {"class_name": "red", "correct": 1, "mr1": 1, "mr2": 0}]
    bins = analysis.size_bins(store, [report.run_id], "MR-1")
    assert int(bins["tested"].sum()) == 1 and int(bins.loc[1, "flagged"]) == 1   # 256 / 3072 = 0.083 -> bin 1


def test_unannotated_images_get_regions_from_a_detector(tmp_path, store):
    """A folder of images without boxes: the detector supplies the objects (seed 000 s4.2), stored with
    region_source = detector; testing the same detector then finds each record as its own object."""
    write_scenes(tmp_path / "imgs", [TWO_RED_ONE_BLUE, {"name": "blank.png", "objects": []}])
    folder = image_folder(tmp_path / "imgs")
    assert [s.rel_path for s in folder] == ["blank.png", "two_red.png"] and not folder.samples[1].objects
    det = ColourDetector()
    ds = detector_regions(folder, det)
    assert [o.box for o in ds.samples[1].objects] == [B, C, A] and ds.samples[1].region_source == "detector"
    assert ds.samples[0].problem[0] == "empty-region" and "found none" in ds.samples[0].problem[1]
    cfg = DetectionConfig(detector="colour", dataset=None, images=str(tmp_path / "imgs"), regions_from="colour",
                          plan="colours3")
    engine = DetectionEngine(store, cfg, detector=det, region_detector=det)
    report = engine.execute()
    rows = by_id(store, report.run_id)
    assert sorted(rows) == ["blank.png", "two_red.png/r0", "two_red.png/r1", "two_red.png/r2"]
    assert {rows[f"two_red.png/r{j}"]["region_source"] for j in range(3)} == {"detector"}
    assert store.get_run(report.run_id).dataset_config["regions_from"] == "colour-components"
    assert all(rows[f"two_red.png/r{j}"]["correct"] for j in range(3))


def test_detector_regions_serve_classifier_runs_too(tmp_path, store):
    """The classifier engine tests the colour model on regions the detector found (no annotation at all)."""
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    from .colour_model import factory

    write_scenes(tmp_path / "imgs", [{"name": "big.png", "objects": [("red", (8, 4, 56, 44))]}])
    ds = detector_regions(image_folder(tmp_path / "imgs"), ColourDetector())
    report = Engine(store, RunConfig(model="py:tests.colour_model:factory", dataset="unused"), model=factory(),
                    dataset=ds).execute()
    (row,) = store.samples(report.run_id)
    assert (row["status"], row["region_source"], row["objects"][0]["box"]) == ("tested", "detector", [8, 4, 56, 44])


def test_unit_ids_and_the_loader_names():
    assert unit_id("12", "r0") == "12/r0" and image_of("12/r0") == "12" and image_of("12") == "12"
    assert image_of("a/b.png/o3") == "a/b.png"
    with pytest.raises(ValueError, match="unknown detector"):
        load_detector("yolo")
    ds = load_coco(*_faces())
    assert {o.category for s in ds for o in s.objects} == {"face", "cat face"}


def _faces():
    from objrel.data.bundled import DEMO_IMAGES
    from objrel.data.detector_regions import DEMO_FACES_ANNOTATIONS

    return DEMO_FACES_ANNOTATIONS, DEMO_IMAGES


def test_export_of_a_detection_run(tmp_path, store):
    import csv
    import io
    import json

    from objrel.analysis.export_detect import export_detection_run

    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE])
    _, report = run(store, ann, stuck_detector())
    units = json.loads(export_detection_run(store, report.run_id, "json"))["units"]
    assert [(u["sample_id"], u["label"], u["t_source"], u["iou_source"]) for u in units] == [
        ("1/o1", "red", 0, 0.0), ("1/o2", "blue", 0, 0.0), ("1/r0", "red", 1, 1.0)]
    m = units[2]["mutations"]["fill_object(colour=black)"]
    assert (m["outcome"], m["iou"], m["t"], m["record_label"]) == ("still detected", 1.0, 1, "red")
    rows = list(csv.DictReader(io.StringIO(export_detection_run(store, report.run_id))))
    assert rows[2]["outcome[fill_object(colour=black)]"] == "still detected"
    assert rows[2]["flagged[MR-1 3 colours]"] == "True" and rows[2]["object_box"] == "4 4 20 20"
