"""Detection runs end to end with hand-written detectors whose every verdict is worked out by hand."""

from __future__ import annotations

import json

import pytest

from objrel.analysis import flag_tables as analysis
from objrel.data import load_coco
from objrel.config import DetectionConfig
from objrel.engine.detect import DetectionEngine
from objrel.data.detector_regions import image_folder
from objrel.engine.regions import detector_regions
from objrel.models import load_detector
from objrel.review.rebuild import rebuild_unit_mutant
from objrel.analysis.summary import summarize
from objrel.store import Store
from objrel.store import detections as D

from tests.fixtures.detection_support import (A, B, C, TWO_RED_ONE_BLUE, ColourDetector, bright_context_detector,
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


def units_of(store, run_id):
    """The run's units by unit id, in stored order (image id, then as the run listed them)."""
    return {u.unit_id: u for u in D.units(store, run_id)}


def checks(store, run_id, **kw):
    return {(v.unit_id, v.mutation_key): v for v in D.verdicts(store, run_id, **kw)}


def test_object_relevant_detector_holds_both_relations_for_each_object(tmp_path, store):
    """Two red squares and a blue one, each found exactly (IoU 1).  Filling a unit's own object black, gray
    or white removes its component: T 1 -> 0, MR-1 holds.  Filling everything *but* that object (the other
    squares included) leaves its component: T stays 1, MR-2 holds.  Records come by score (pixels / 1000):
    B 0.400, C 0.324, A 0.256."""
    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE, {"name": "empty.png", "objects": [], "annotate": False},
                                        {"name": "green.png", "objects": [("green", (2, 2, 9, 9))]}])
    _, report = run(store, ann, ColourDetector())
    rows = by_id(store, report.run_id)
    assert sorted(rows) == ["1", "2", "3"]                       # one samples row per image
    assert rows["1"]["status"] == "tested" and [o["box"] for o in rows["1"]["objects"]] == [list(A), list(B), list(C)]
    units = units_of(store, report.run_id)
    assert list(units) == ["1/r0", "1/r1", "1/r2"]
    assert [(u.image_id, u.key, u.kind) for u in units.values()] == [("1", f"r{j}", "record") for j in range(3)]
    assert [units[f"1/r{j}"].object_box for j in range(3)] == [B, C, A]
    assert [units[f"1/r{j}"].object_index for j in range(3)] == [1, 2, 0]
    assert [units[f"1/r{j}"].label for j in range(3)] == ["red", "blue", "red"]
    assert rows["2"]["skip_code"] == "empty-region"
    assert rows["3"]["skip_code"] == "unknown-label" and "green" in rows["3"]["skip_reason"]
    v = votes(store, report.run_id)
    for j in range(3):
        u = units[f"1/r{j}"]
        assert u.tested and u.t_source == 1
        assert (u.s_p, u.s_r, u.s) == (1.0, 1.0, 1.0)
        assert v[(f"1/r{j}", "MR-1")]["violations"] == 0 and v[(f"1/r{j}", "MR-2")]["violations"] == 0
    outcomes = {k: x.outcome for k, x in checks(store, report.run_id).items()}
    assert outcomes[("1/r2", "fill_object(colour=gray)")] == "removed"
    assert outcomes[("1/r2", "fill_background(colour=black)")] == "kept"
    # the region of unit r2 is object A alone: its area share of the 64x48 image
    assert units["1/r2"].area_ratio == pytest.approx(16 * 16 / (64 * 48))
    run_rec = store.get_run(report.run_id)
    assert (run_rec.task, run_rec.n_total, run_rec.n_done, run_rec.n_tested, run_rec.n_skipped) == (
        "detection", 3, 3, 3, 2)
    assert store.class_names(report.run_id) == ["red", "blue"]
    # the image's source records, and the unit's compared record rcd with test T
    assert D.source_detections(store, report.run_id, "1")["labels"] == ["red", "blue", "red"]
    r2 = units["1/r2"]
    assert (r2.record_index, r2.record_label, r2.record_box) == (2, "red", A)
    assert (r2.t_source, r2.iou_source, r2.label_index, r2.record_score) == (1, 1.0, 0, 0.256)
    # the records survive a JSON round trip (export, caches)
    assert D.DetectionUnit.from_dict(json.loads(json.dumps(r2.to_dict()))) == r2
    some = D.verdicts(store, report.run_id)[0]
    assert D.DetectionVerdict.from_dict(json.loads(json.dumps(some.to_dict()))) == some


def test_detector_that_ignores_the_object_violates_mr1_and_misses_are_units(tmp_path, store):
    """A detector stuck on (4, 4, 20, 20): unit r0 is tied to A (IoU 1).  Filling A leaves the box where it was:
    T stays 1, MR-1 violated 3 of 3, flagged; MR-2 holds.  B and C are never found: units o1, o2 with T 0,
    MR-1 n/a (nothing to remove), MR-2 holds (still missed).  S_r of r0 is 0 (IoU never dropped), S_p 1."""
    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE])
    _, report = run(store, ann, stuck_detector())
    units = units_of(store, report.run_id)
    assert list(units) == ["1/r0", "1/o1", "1/o2"]
    assert [(u.kind, u.t_source, u.object_index) for u in units.values()] == [
        ("record", 1, 0), ("missed", 0, 1), ("missed", 0, 2)]
    assert units["1/o1"].object_box == B and units["1/o2"].label == "blue"
    assert units["1/o1"].record_index is None and units["1/o1"].iou_source == 0.0
    v = votes(store, report.run_id)
    assert (v[("1/r0", "MR-1")]["violations"], v[("1/r0", "MR-1")]["flagged"]) == (3, True)
    assert v[("1/r0", "MR-2")]["flagged"] is False
    assert (v[("1/o1", "MR-1")]["applicable"], v[("1/o1", "MR-1")]["flagged"]) == (0, False)
    assert v[("1/o1", "MR-2")]["violations"] == 0
    assert (units["1/r0"].s_p, units["1/r0"].s_r, units["1/r0"].s) == (1.0, 0.0, 0.5)
    assert units["1/o1"].s_p is None
    found = checks(store, report.run_id)
    assert found[("1/r0", "fill_object(colour=white)")].outcome == "still detected"
    assert (found[("1/r0", "fill_object(colour=white)")].t_mutant, found[("1/r0", "fill_object(colour=white)")]
            .iou_mutant) == (1, 1.0)
    assert found[("1/o1", "fill_object(colour=white)")].outcome == "not detected on the source"
    assert found[("1/o2", "fill_background(colour=gray)")].outcome == "still missed"
    # no MR-1 mutant was made for an undetected unit
    assert (found[("1/o1", "fill_object(colour=black)")].detections, found[("1/o1", "fill_object(colour=black)")]
            .seed) == (None, None)
    s = summarize(store, report.run_id)
    assert (s.samples, s.evaluated, s.correct, s.mr1, s.mr2) == (1, 3, 1, 1, 0)
    assert (s.missing_detections, s.incorrect_detections) == (0, 0)


def test_background_driven_detector_gives_missing_detections(tmp_path, store):
    """Found only when the median gray is >= 150.  Source background 200: both squares found.  For each
    unit, a black (median 0) or gray (127) background hides it: T 1 -> 0, a missing detection; a white one
    (255) keeps it.  MR-2 violated 2 of 3 -> flagged.  Filling the unit's own square leaves the median at 200
    and the other square found, but nothing overlaps the filled one: MR-1 holds."""
    ann = write_scenes(tmp_path / "s", [{"name": "b.png", "background": 200,
                                         "objects": [("red", (4, 4, 20, 20)), ("red", (30, 4, 50, 24))]}])
    _, report = run(store, ann, bright_context_detector())
    v = votes(store, report.run_id)
    assert list(units_of(store, report.run_id)) == ["1/r0", "1/r1"]
    for u in ("1/r0", "1/r1"):
        assert (v[(u, "MR-2")]["violations"], v[(u, "MR-2")]["flagged"]) == (2, True)
        assert v[(u, "MR-1")]["violations"] == 0
    outcomes = [x.outcome for x in D.verdicts(store, report.run_id, relation="MR-2")]
    assert sorted(outcomes) == ["kept", "kept", "missing detection", "missing detection", "missing detection",
                                "missing detection"]
    s = summarize(store, report.run_id)
    assert (s.correct, s.mr1, s.mr2, s.both) == (2, 0, 2, 0)
    assert (s.missing_detections, s.incorrect_detections) == (4, 0)


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
    incorrect = [x for x in D.verdicts(store, report.run_id) if x.outcome == "incorrect detection"]
    assert len(incorrect) == 4 and all((x.t_source, x.t_mutant, x.iou_mutant) == (0, 1, 1.0) for x in incorrect)
    s = summarize(store, report.run_id)
    assert (s.correct, s.mr2, s.flagged_all_mr2) == (0, 0, 2)   # flagged, but not among correct inferences
    assert (s.missing_detections, s.incorrect_detections) == (0, 4)

    only = Store(tmp_path / "only.db")
    _, rep2 = run(only, ann, dark_context_detector(), detected_only=True)
    assert [r["status"] for r in only.samples(rep2.run_id)] == ["untested"]
    assert [(u.unit_id, u.tested) for u in D.units(only, rep2.run_id)] == [("1/o0", False), ("1/o1", False)]
    assert D.verdicts(only, rep2.run_id) == [] and only.votes(rep2.run_id) == []


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

    assert stored_rows(a, ra.run_id) == stored_rows(b, rb.run_id)
    # the exact mutant the run fed to the detector: same detections and seed as stored
    rebuilt = rebuild_unit_mutant(a, ra.run_id, "1/r2", "random_erase(ratio=0.5)")
    stored = checks(a, ra.run_id)[("1/r2", "random_erase(ratio=0.5)")]
    redone = ea.detector.detect([rebuilt.mutant])[0]
    assert redone.to_dict() == stored.detections and rebuilt.seed == stored.seed


def stored_rows(st, rid):
    """Every row a detection run stored, without ids and timings, sorted: equal for equal runs."""
    rows = st.samples(rid) + st.votes(rid) + [u.to_dict() for u in D.units(st, rid)] + [
        v.to_dict() for v in D.verdicts(st, rid)]
    return sorted(repr({k: v for k, v in r.items() if k not in VOLATILE}) for r in rows)


def test_resume_after_a_stop_matches_an_uninterrupted_run(tmp_path):
    scenes = [dict(TWO_RED_ONE_BLUE, name=f"s{i}.png") for i in range(4)]
    ann = write_scenes(tmp_path / "s", scenes)
    full = Store(tmp_path / "full.db")
    _, rf = run(full, ann, ColourDetector(), batch_size=2)
    part = Store(tmp_path / "part.db")
    eng = DetectionEngine(part, DetectionConfig(detector="colour", dataset=str(ann), plan="colours3", batch_size=2),
                          detector=ColourDetector())
    first = eng.execute(stop_after=1)
    assert first.status == "pending" and [s["sample_id"] for s in part.samples(first.run_id)] == ["1"]
    assert {u.image_id for u in D.units(part, first.run_id)} == {"1"}
    second = eng.execute(run_id=first.run_id)
    third = eng.execute(run_id=first.run_id)
    assert (second.status, second.processed, third.processed) == ("finished", 3, 0)
    assert stored_rows(part, first.run_id) == stored_rows(full, rf.run_id)   # nothing duplicated, nothing lost
    assert len(D.units(part, first.run_id)) == 12 and len(D.verdicts(part, first.run_id)) == 12 * 6
    assert (part.get_run(first.run_id).n_done, part.get_run(first.run_id).n_tested) == (4, 12)


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
    assert sorted(rows) == ["blank.png", "two_red.png"] and rows["two_red.png"]["region_source"] == "detector"
    units = units_of(store, report.run_id)
    assert list(units) == ["two_red.png/r0", "two_red.png/r1", "two_red.png/r2"]
    assert {u.image_id for u in units.values()} == {"two_red.png"}
    assert store.get_run(report.run_id).dataset_config["regions_from"] == "colour-components"
    assert all(u.detected for u in units.values())


def test_detector_regions_serve_classifier_runs_too(tmp_path, store):
    """The classifier engine tests the colour model on regions the detector found (no annotation at all)."""
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    from tests.fixtures.colour_model import factory

    write_scenes(tmp_path / "imgs", [{"name": "big.png", "objects": [("red", (8, 4, 56, 44))]}])
    ds = detector_regions(image_folder(tmp_path / "imgs"), ColourDetector())
    report = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset="unused"), model=factory(),
                    dataset=ds).execute()
    (row,) = store.samples(report.run_id)
    assert (row["status"], row["region_source"], row["objects"][0]["box"]) == ("tested", "detector", [8, 4, 56, 44])


def test_unit_ids_and_the_loader_names():
    assert D.make_unit_id("12", "r0") == "12/r0" and D.make_unit_id("a/b.png", "o3") == "a/b.png/o3"
    assert (D.unit_kind("r0"), D.unit_kind("o3")) == ("record", "missed")
    with pytest.raises(ValueError, match="r<record index> or o<object index>, got 'x1'"):
        D.unit_kind("x1")
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

    from objrel.analysis.export import export_run

    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE])
    _, report = run(store, ann, stuck_detector())
    units = json.loads(export_run(store, report.run_id, "json"))["inferences"]
    assert [(u["unit_id"], u["image_id"], u["unit"], u["kind"], u["label"], u["t_source"], u["iou_source"])
            for u in units] == [("1/r0", "1", "r0", "record", "red", 1, 1.0),
                                ("1/o1", "1", "o1", "missed", "red", 0, 0.0),
                                ("1/o2", "1", "o2", "missed", "blue", 0, 0.0)]
    m = units[0]["mutations"]["fill_object(colour=black)"]
    assert (m["outcome"], m["iou"], m["t"], m["record_label"]) == ("still detected", 1.0, 1, "red")
    rows = list(csv.DictReader(io.StringIO(export_run(store, report.run_id))))
    assert [r["unit_id"] for r in rows] == ["1/r0", "1/o1", "1/o2"]
    assert rows[0]["outcome[fill_object(colour=black)]"] == "still detected"
    assert rows[0]["flagged[MR-1 3 colours]"] == "True" and rows[0]["object_box"] == "4 4 20 20"
    assert rows[1]["outcome[fill_object(colour=black)]"] == "not detected on the source"


def test_a_schema_1_store_moves_its_detection_runs_into_the_detection_tables(tmp_path):
    """Schema 1 kept each unit as a samples row "<image>/<key>", its records in predictions, IoUs in the verdicts'
    certainty columns and the outcome in their note.  Opening such a store moves every detection run into the
    detection tables once; the votes (already keyed by unit id) and the review queue are untouched."""
    from sqlalchemy import insert, select, text, update

    from objrel.store import schema as S

    path = tmp_path / "old.db"
    old = Store(path)
    rid = old.create_run(name="old", model="stuck", model_config={}, task="detection", class_names=["red", "blue"],
                         dataset="s", dataset_config={"root": str(tmp_path)}, plan={"groups": []}, config={}, seed=0,
                         n_total=2)
    obj = lambda box: {"category": "red", "class_index": 0, "box": list(box), "segmentation": None,  # noqa: E731
                       "iscrowd": False}
    found = {"boxes": [list(A)], "labels": ["red"], "scores": [0.9]}
    rec = {"index": 0, "label": "red", "score": 0.9, "iou": 1.0, "box": list(A)}
    none = {"index": None, "label": None, "score": None, "iou": 0.0, "box": None}
    unit = {"rel_path": "two.png", "region_source": "annotation", "gt_categories": ["red"], "width": 64, "height": 48,
            "gt_labels": [0], "status": "tested", "elapsed_ms": 2.0}
    black, erase = "fill_object(colour=black)", "fill_object"

    def put(c, table, rows):
        for r in rows:
            c.execute(insert(table).values(**r))

    with old.engine.begin() as c:
        put(c, S.samples, [
            {"run_id": rid, "sample_id": "1/r0", **unit, "predicted": [0], "correct": True, "objects": [obj(A)],
             "area_ratio": 0.08, "s_p": 1.0, "s_r": 0.0, "s": 0.5},
            {"run_id": rid, "sample_id": "1/o1", **unit, "predicted": [], "correct": False, "objects": [obj(B)],
             "area_ratio": 0.13},
            {"run_id": rid, "sample_id": "2", "rel_path": "g.png", "gt_categories": ["green"], "status": "skipped",
             "skip_code": "unknown-label", "skip_reason": "no red or blue object"}])
        put(c, S.predictions, [
            {"run_id": rid, "sample_id": "1/r0", "mutation_key": "source", "seed": None,
             "prediction": {"detections": found, "record": rec, "t": 1}},
            {"run_id": rid, "sample_id": "1/r0", "mutation_key": black, "seed": "123",
             "prediction": {"detections": found, "record": rec, "t": 1}},
            {"run_id": rid, "sample_id": "1/o1", "mutation_key": "source", "seed": None,
             "prediction": {"detections": found, "record": none, "t": 0}},
            {"run_id": rid, "sample_id": "1/o1", "mutation_key": black, "seed": "456", "prediction": None}])
        put(c, S.verdicts, [
            {"run_id": rid, "sample_id": "1/r0", "mutation_key": black, "operator": erase, "relation": "MR-1",
             "verdict": "violated", "source_certainty": 1.0, "mutant_certainty": 1.0, "label_changed": False,
             "distance": 0.0, "note": "still detected"},
            {"run_id": rid, "sample_id": "1/o1", "mutation_key": black, "operator": erase, "relation": "MR-1",
             "verdict": "n/a", "source_certainty": 0.0, "note": "not detected on the source"}])
        put(c, S.votes, [
            {"run_id": rid, "sample_id": sid, "group_name": "MR-1 black", "relation": "MR-1", "is_primary": True,
             "k": 1, "n": 1, "applicable": int(flag), "violations": int(flag), "flagged": flag}
            for sid, flag in (("1/r0", True), ("1/o1", False))])
        c.execute(update(S.runs).values(n_done=2, n_skipped=1, n_tested=2))
        c.execute(update(S.meta).where(S.meta.c.key == "schema_version").values(value="1"))
        c.execute(text("DROP TABLE alembic_version"))   # a schema-1 store predates Alembic
    old.dispose()

    new = Store(path)
    with new.engine.connect() as c:
        stamped = c.execute(select(S.meta.c.value).where(S.meta.c.key == "schema_version")).scalar()
        assert stamped == str(S.SCHEMA_VERSION)
    rows = by_id(new, rid)
    assert sorted(rows) == ["1", "2"] and rows["2"]["skip_code"] == "unknown-label"
    assert (rows["1"]["status"], rows["1"]["objects"]) == ("tested", [obj(A), obj(B)])
    units = units_of(new, rid)
    assert [(u.unit_id, u.image_id, u.key, u.kind, u.object_index, u.t_source, u.tested) for u in units.values()] == [
        ("1/r0", "1", "r0", "record", 0, 1, True), ("1/o1", "1", "o1", "missed", 1, 0, True)]
    assert (units["1/r0"].record_index, units["1/r0"].record_score, units["1/r0"].s) == (0, 0.9, 0.5)
    assert units["1/o1"].object_box == B and units["1/o1"].record_index is None
    got = checks(new, rid)
    still = got[("1/r0", black)]
    assert (still.outcome, still.iou_source, still.iou_mutant, still.t_mutant, still.seed, still.record_index) == (
        "still detected", 1.0, 1.0, 1, 123, 0)
    assert still.detections == found
    missed = got[("1/o1", black)]
    assert (missed.verdict, missed.outcome, missed.detections, missed.t_mutant, missed.seed) == (
        "n/a", "not detected on the source", None, None, 456)
    assert D.source_detections(new, rid, "1") == found
    assert new.verdicts(rid) == [] and set(new.predictions(rid, "1")) == {"source"}
    assert new.flagged_sample_ids(rid, "MR-1") == ["1/r0"]
    s = summarize(new, rid)
    assert (s.samples, s.skipped, s.evaluated, s.correct, s.mr1) == (2, 1, 2, 1, 1)
    new.dispose()
    again = Store(path)                                           # the move happens once
    assert len(D.units(again, rid)) == 2 and len(again.samples(rid)) == 2
    again.dispose()


def test_t_on_a_mutant_reads_the_units_label_not_a_better_overlapping_other_label(tmp_path, store):
    """A two-label detector that always reports, over red square A (16 x 16), a "blue" box of A's top 13.216
    rows (IoU 0.826, score 0.9) and a "red" one of its top 12.8 rows (IoU 0.8, score 0.8).  The red record
    (r1) is tied to A; the blue one overlaps no blue object and is no unit.  On every mutant the red record
    is still there, so seed 001's T stays 1: MR-1 is violated 3 of 3 ("still detected") and MR-2 holds
    ("kept").  The record nearest A (any label, seed 002 s V-B) is the blue one on the source and on every
    mutant alike, so nothing changed: D removing = max(0, 0.826 - 0.826) / 0.826 = 0, D preserving = 1 (same
    label, same IoU), so S_p = 1, S_r = 0.  (Reading the red record on the source and the blue one on the
    mutant would call the unchanged output a label change, D preserving = 0.)"""
    from objrel.models.detector import CallableDetector

    x1, y1, x2, _ = A
    blue, red = (x1, y1, x2, y1 + 13.216), (x1, y1, x2, y1 + 12.8)
    det = CallableDetector(lambda images: [([blue, red], ["blue", "red"], [0.9, 0.8]) for _ in images],
                           labels=("red", "blue"), name="two-labels")
    ann = write_scenes(tmp_path / "s", [TWO_RED_ONE_BLUE])
    _, report = run(store, ann, det)
    units = units_of(store, report.run_id)
    assert list(units) == ["1/r1", "1/o1", "1/o2"]
    r1 = units["1/r1"]
    assert (r1.object_index, r1.t_source, r1.iou_source) == (0, 1, pytest.approx(0.8))
    found = checks(store, report.run_id)
    for colour in ("black", "gray", "white"):
        mr1 = found[("1/r1", f"fill_object(colour={colour})")]
        assert (mr1.outcome, mr1.t_mutant, mr1.record_label) == ("still detected", 1, "blue")
        assert mr1.iou_mutant == pytest.approx(0.826) and mr1.distance == 0.0
        mr2 = found[("1/r1", f"fill_background(colour={colour})")]
        assert (mr2.outcome, mr2.t_mutant, mr2.label_changed, mr2.distance) == ("kept", 1, False, 1.0)
    v = votes(store, report.run_id)
    assert (v[("1/r1", "MR-1")]["violations"], v[("1/r1", "MR-1")]["flagged"]) == (3, True)
    assert (v[("1/r1", "MR-2")]["violations"], v[("1/r1", "MR-2")]["flagged"]) == (0, False)
    assert (r1.s_p, r1.s_r, r1.s) == (1.0, 0.0, 0.5)
