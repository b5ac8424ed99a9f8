"""objrel.analysis.overview and the report's tables: incorrect inferences, detection headlines, percentages."""

from __future__ import annotations

import json

import pandas as pd

from objrel.analysis.overview import detection_summary_table, striking_examples, summary_table
from objrel.analysis.report import _table, build_report, percent_text
from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.store import Store

from tests.analysis.test_analysis import Inf, add_run
from tests.conftest import write_flagged_set
from tests.fixtures.colour_model import factory


def test_striking_examples_leave_incorrect_inferences_out_unless_asked(store):
    rid = add_run(store, [Inf("good", mr1=True, mr2=True), Inf("wrong", correct=False, mr1=True, mr2=True),
                          Inf("quiet")], test_all=True)
    shown = striking_examples(store)
    assert [e["sample_id"] for e in shown] == ["good"] and shown[0]["correct"] is True
    every = striking_examples(store, include_incorrect=True)
    assert [(e["sample_id"], e["correct"], e["run_id"]) for e in every] == [("good", True, rid), ("wrong", False, rid)]


def test_summary_table_holds_classifier_runs_only(store):
    add_run(store, [Inf("a", mr2=True), Inf("b", correct=False)], test_all=False)
    rows = summary_table(store)
    assert len(rows) == 1 and rows[0]["Violating MR-2"] == "1 (100.00%)" and "Missing detections" not in rows[0]
    assert detection_summary_table(store) == []


def test_detection_runs_get_their_own_headline(tmp_path):
    from objrel.engine.detect import DetectionEngine
    from objrel.config import DetectionConfig
    from tests.fixtures.detection_support import bright_context_detector, write_scenes

    ann = write_scenes(tmp_path / "s", [{"name": "b.png", "background": 200,
                                         "objects": [("red", (4, 4, 20, 20)), ("red", (30, 4, 50, 24))]}])
    store = Store(tmp_path / "det.db")
    try:
        DetectionEngine(store, DetectionConfig(detector="bright", dataset=str(ann), plan="colours3", name="det"),
                        detector=bright_context_detector()).execute()
        assert summary_table(store) == []
        (row,) = detection_summary_table(store)
        # one image, two units both detected; MR-2: black and gray backgrounds hide both (2 units x 2 mutations)
        assert (row["Images"], row["Units"], row["Detected"]) == (1, 2, "2 (100.0%)")
        assert (row["Missing detections"], row["Incorrect detections"]) == (4, 0)
        assert row["Violating MR-2"] == "2 (100.0%)"
        assert "Accuracy" not in row
        # the kept flagged count names units, as the votes do: 2 flagged, the same as the store's own list
        from objrel.review.agreement import flagged_count

        run_id = store.list_runs()[0].id
        assert flagged_count(store, run_id, "MR-2") == len(store.flagged_sample_ids(run_id, "MR-2")) == 2
    finally:
        store.dispose()


def test_report_tables_show_percentages_with_one_decimal_and_fit_the_page():
    df = pd.DataFrame({"true positive": [1], "true positive %": [50.0], "false positive %": [float("nan")],
                       "ratio": [0.25]})
    html = _table(df)
    assert "50.0%" in html and "50.000" not in html and "0.250" in html
    assert html.startswith("<div class='tablewrap'>")
    assert percent_text(None) == "-" and percent_text(12.345) == "12.3%"


def test_report_marks_incorrect_inferences(tmp_path):
    ann = write_flagged_set(tmp_path / "flagged")
    coco = json.loads(ann.read_text())
    coco["annotations"][0]["category_id"] = 2      # f1.png: the model still says red, the truth is now green
    ann.write_text(json.dumps(coco))
    store = Store(tmp_path / "all.db")
    try:
        rid = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann),
                                      plan="colours3", name="all", test_all=True), model=factory()).execute().run_id
        row = store.sample(rid, "1")
        assert row["correct"] is False or row["correct"] == 0
        assert "1" in store.flagged_sample_ids(rid, "MR-2")
        html = build_report(store, rid)
        assert html.count("<span class='badge'>incorrect inference</span>") == 2   # MR-2 and MR-1 galleries
        assert [e["sample_id"] for e in striking_examples(store, limit=10)].count("1") == 0
        assert [e["sample_id"] for e in striking_examples(store, limit=10, include_incorrect=True)][-1] == "1"
    finally:
        store.dispose()


def test_run_history_shows_the_progress_line_numbers(store):
    import datetime as dt
    import os

    from objrel.analysis.overview import HISTORY_COLUMNS, run_history
    from objrel.progress import estimate_text, run_estimate

    done = add_run(store, [Inf("a"), Inf("b")], test_all=False)
    store.update_run(done, status="finished", timings={"seconds": 4.0, "forward_passes": 14, "steps": {}})
    live = add_run(store, [Inf("c")], test_all=False)
    t0 = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=10)
    store.update_run(live, status="running", pid=os.getpid(), started_at=t0, heartbeat_at=t0, n_done=1)
    store.set_progress(live, 50, 150)
    runs = store.list_runs()
    table = run_history(runs).set_index("run")
    assert tuple(run_history(runs).reset_index(drop=True).columns) == HISTORY_COLUMNS
    # the running run: the same samples and passes as its progress line (done/expected while it runs)
    line = estimate_text(run_estimate(runs[1]))
    assert table.loc[live, "status"] == "running" and table.loc[live, "forward passes"] == "50/150"
    assert line.startswith(f"{table.loc[live, 'samples']} samples, 50/150 forward passes")
    assert table.loc[done, "status"] == "finished" and table.loc[done, "samples"] == "2/2"
    assert table.loc[done, "passes/s"] == "3.5" and table.loc[live, "passes/s"] == ""   # 14 / 4 s; none yet
    assert list(run_history([]).columns) == list(HISTORY_COLUMNS)
